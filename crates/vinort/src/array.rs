//! `ndarray` interop (feature `ndarray`, on by default): arrays as run inputs, borrowed
//! without a copy when they are contiguous in row-major order, and outputs read back as array
//! views of the output's own storage ([`Value::try_extract_array`](crate::Value::try_extract_array)).
//!
//! ```
//! # fn main() -> Result<(), vinort::Error> {
//! use ndarray::{Array4, ArrayViewD};
//! use vinort::{Input, Runtime, inputs};
//!
//! # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
//! let session = Runtime::load(model)?.build()?;
//! let image = Array4::<f32>::from_elem((1, 3, 64, 64), 0.5);
//!
//! // A contiguous array is borrowed as it lies: no copy of its data, ever.
//! let before = vinort::ir::stats::snapshot();
//! let Input::Borrowed(borrowed) = Input::from(&image) else { unreachable!() };
//! assert_eq!(borrowed.data_ptr(), image.as_ptr().cast());
//! assert_eq!(vinort::ir::stats::snapshot().since(&before).tensor_copies, 0);
//!
//! let outputs = session.run(inputs!["input" => &image])?;
//! // The output as an ndarray view over the tensor the run returned: no copy either.
//! let probabilities: ArrayViewD<f32> = outputs["probabilities"].try_extract_array()?;
//! assert_eq!(probabilities.shape(), &[1, 10]);
//! assert_eq!(probabilities.as_ptr().cast(), outputs["probabilities"].as_tensor()?.data_ptr());
//! assert!((probabilities.sum() - 1.0).abs() < 1e-4);
//! # Ok(()) }
//! ```

use ndarray::{Array, ArrayBase, ArrayView, CowArray, Data, Dimension};

use crate::{Elem, Input, Tensor, TensorRef, Value};

fn owned<'a, T: Elem, S: Data<Elem = T>, D: Dimension>(array: &ArrayBase<S, D>) -> Input<'a> {
    match Tensor::from_array(array) {
        Ok(t) => Input::Value(Value::Tensor(t)),
        Err(e) => Input::Invalid(e.into()),
    }
}

fn borrowed<'a, T: Elem>(shape: &[usize], data: &'a [T]) -> Input<'a> {
    match TensorRef::from_slice(shape, data) {
        Ok(t) => Input::Borrowed(t),
        Err(e) => Input::Invalid(e),
    }
}

/// A reference to any array: borrowed when contiguous in row-major order, else gathered into
/// a tensor (one copy).
impl<'a, T: Elem, S: Data<Elem = T>, D: Dimension> From<&'a ArrayBase<S, D>> for Input<'a> {
    fn from(array: &'a ArrayBase<S, D>) -> Self {
        match array.as_slice() {
            Some(data) => borrowed(array.shape(), data),
            None => owned(array),
        }
    }
}

/// A view: borrowed when contiguous in row-major order, else gathered (one copy).
impl<'a, T: Elem, D: Dimension> From<ArrayView<'a, T, D>> for Input<'a> {
    fn from(view: ArrayView<'a, T, D>) -> Self {
        match view.to_slice() {
            Some(data) => borrowed(view.shape(), data),
            None => owned(&view),
        }
    }
}

/// A `CowArray`: a contiguous borrowed one is borrowed, anything else is gathered (one copy).
impl<'a, T: Elem, D: Dimension> From<CowArray<'a, T, D>> for Input<'a> {
    fn from(array: CowArray<'a, T, D>) -> Self {
        match array.as_slice() {
            Some(data) if array.is_view() => {
                // SAFETY: a view's elements are borrowed for 'a from memory `array` does not
                // own, so they stay valid after `array` is dropped; extending the slice to 'a
                // is what `ArrayView::to_slice` does for a view.
                let data: &'a [T] = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
                borrowed(array.shape(), data)
            }
            _ => owned(&array),
        }
    }
}

/// An owned array: its elements move into a tensor (one copy into aligned storage).
impl<'a, T: Elem, D: Dimension> From<Array<T, D>> for Input<'a> {
    fn from(array: Array<T, D>) -> Self {
        owned(&array)
    }
}
