//! A read (uncompiled) model and the edits vinort makes before compiling it.

use std::ptr;

use openvino_sys as sys;

use super::{OvResult, check, cstring};

owned_handle! {
    /// A read (uncompiled) model.
    OvModel: ov_model_t, ov_model_free
}

// SAFETY: a model object may move between threads; vinort only touches one under a mutex.
unsafe impl Send for OvModel {}

impl OvModel {
    /// Gives input `name` a partial shape: `(min, max)` per dim, `-1` max for unbounded.
    pub fn reshape_input(&self, name: &str, dims: &[(i64, i64)]) -> OvResult<()> {
        let n = cstring(name)?;
        let ds: Vec<sys::ov_dimension_t> =
            dims.iter().map(|(min, max)| sys::ov_dimension_t { min: *min, max: *max }).collect();
        let mut ps = sys::ov_partial_shape_t { rank: sys::ov_dimension_t { min: 0, max: 0 }, dims: ptr::null_mut() };
        // SAFETY: ds valid for its length; ps freed below.
        check("ov_partial_shape_create", unsafe {
            sys::ov_partial_shape_create(ds.len() as i64, ds.as_ptr(), &mut ps)
        })?;
        // SAFETY: valid model, name and partial shape (passed by value, copied by OpenVINO).
        let st = unsafe { sys::ov_model_reshape_input_by_name(self.raw, n.as_ptr(), ps) };
        // SAFETY: ps came from ov_partial_shape_create.
        unsafe { sys::ov_partial_shape_free(&mut ps) };
        check("ov_model_reshape_input_by_name", st)
    }

    /// Declares the layout (`NCHW`, `NC?`...) of input `name`; returns the rebuilt model.
    pub fn with_input_layout(self, name: &str, layout: &str) -> OvResult<OvModel> {
        let (n, l) = (cstring(name)?, cstring(layout)?);
        let mut ppp = ptr::null_mut();
        // SAFETY: valid model and out-parameter; ppp freed at the end.
        check("ov_preprocess_prepostprocessor_create", unsafe {
            sys::ov_preprocess_prepostprocessor_create(self.raw, &mut ppp)
        })?;
        let result = (|| {
            let mut info = ptr::null_mut();
            // SAFETY: valid handles and out-parameter.
            check("ov_preprocess_prepostprocessor_get_input_info_by_name", unsafe {
                sys::ov_preprocess_prepostprocessor_get_input_info_by_name(ppp, n.as_ptr(), &mut info)
            })?;
            let mut model_info = ptr::null_mut();
            // SAFETY: valid handles and out-parameter.
            let st = unsafe { sys::ov_preprocess_input_info_get_model_info(info, &mut model_info) };
            if st != sys::ov_status_e::OK {
                // SAFETY: info came from get_input_info_by_name.
                unsafe { sys::ov_preprocess_input_info_free(info) };
                return check("ov_preprocess_input_info_get_model_info", st).map(|_| ptr::null_mut());
            }
            let mut lay = ptr::null_mut();
            // SAFETY: valid C string and out-parameter.
            let st = unsafe { sys::ov_layout_create(l.as_ptr(), &mut lay) };
            let st = if st == sys::ov_status_e::OK {
                // SAFETY: valid handles; OpenVINO copies the layout.
                let s2 = unsafe { sys::ov_preprocess_input_model_info_set_layout(model_info, lay) };
                // SAFETY: lay came from ov_layout_create.
                unsafe { sys::ov_layout_free(lay) };
                ("ov_preprocess_input_model_info_set_layout", s2)
            } else {
                ("ov_layout_create", st)
            };
            // SAFETY: both came from the getters above.
            unsafe {
                sys::ov_preprocess_input_model_info_free(model_info);
                sys::ov_preprocess_input_info_free(info);
            }
            check(st.0, st.1)?;
            let mut built = ptr::null_mut();
            // SAFETY: valid handle and out-parameter.
            check("ov_preprocess_prepostprocessor_build", unsafe {
                sys::ov_preprocess_prepostprocessor_build(ppp, &mut built)
            })?;
            Ok(built)
        })();
        // SAFETY: ppp came from ov_preprocess_prepostprocessor_create.
        unsafe { sys::ov_preprocess_prepostprocessor_free(ppp) };
        Ok(OvModel { raw: result? })
    }
}
