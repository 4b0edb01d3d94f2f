//! `ndarray` interop (feature `ndarray`): a tensor's elements as an array view without a copy,
//! and tensors made from arrays.
//!
//! ```
//! use ndarray::array;
//! use vinort_ir::Tensor;
//!
//! let a = array![[1.0f32, 2.0], [3.0, 4.0]];
//! let t = Tensor::from_array(&a)?;
//! let view = t.try_extract_array::<f32>()?;
//! assert_eq!(view, a.into_dyn());
//! assert_eq!(view.as_ptr().cast::<u8>(), t.data_ptr()); // a view of the tensor's own storage
//! # Ok::<(), vinort_ir::Error>(())
//! ```

use ndarray::{ArrayBase, ArrayD, ArrayViewD, Data, Dimension, IxDyn};

use super::Tensor;
use crate::dtype::Elem;
use crate::error::{Error, Result};

impl Tensor {
    /// The elements as an `ndarray` view of the tensor's shape, borrowing its storage (no
    /// copy). An error when the tensor does not hold `T`.
    pub fn try_extract_array<T: Elem>(&self) -> Result<ArrayViewD<'_, T>> {
        let data = self.as_slice::<T>()?;
        ArrayViewD::from_shape(IxDyn(self.shape()), data)
            .map_err(|e| Error::invalid(format!("a tensor of shape {:?} as an array: {e}", self.shape())))
    }

    /// The elements copied into an owned array.
    pub fn to_array<T: Elem>(&self) -> Result<ArrayD<T>> {
        Ok(self.try_extract_array::<T>()?.to_owned())
    }

    /// A tensor holding a copy of the array's elements in row-major order (any layout: a
    /// transposed or sliced view is gathered). To hand an array to a run without a copy,
    /// borrow it instead (`vinort::Input::from(&array)`).
    pub fn from_array<T: Elem, S: Data<Elem = T>, D: Dimension>(array: &ArrayBase<S, D>) -> Result<Tensor> {
        match array.as_slice() {
            Some(contiguous) => Tensor::from_slice(array.shape(), contiguous),
            None => Tensor::from_vec(array.shape(), array.iter().copied().collect()),
        }
    }
}

impl<T: Elem, D: Dimension> TryFrom<ndarray::Array<T, D>> for Tensor {
    type Error = Error;
    fn try_from(array: ndarray::Array<T, D>) -> Result<Tensor> {
        Tensor::from_array(&array)
    }
}

impl<'a, T: Elem> TryFrom<&'a Tensor> for ArrayViewD<'a, T> {
    type Error = Error;
    fn try_from(t: &'a Tensor) -> Result<ArrayViewD<'a, T>> {
        t.try_extract_array()
    }
}

#[cfg(test)]
mod tests {
    use ndarray::{Array, ArrayD, IxDyn, s};

    use crate::{DType, Error, Tensor};

    #[test]
    fn arrays_round_trip_in_any_layout() {
        let a = Array::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 100 + j * 10 + k) as i64);
        // Contiguous, transposed (Fortran order) and strided slices all become row-major
        // tensors of the logical shape.
        for view in [a.view(), a.view().reversed_axes(), a.slice(s![.., 1..3, ..;2])] {
            let t = Tensor::from_array(&view).unwrap();
            assert_eq!(t.dtype(), DType::I64);
            assert_eq!(t.shape(), view.shape());
            assert_eq!(t.try_extract_array::<i64>().unwrap(), view.into_dyn());
            let expected: Vec<i64> = view.iter().copied().collect();
            assert_eq!(t.as_slice::<i64>().unwrap(), &expected[..]);
        }
        let owned: ArrayD<i64> = Tensor::try_from(a.clone()).unwrap().to_array().unwrap();
        assert_eq!(owned, a.into_dyn());
    }

    #[test]
    fn the_wrong_element_type_is_an_error() {
        let t = Tensor::from_slice(&[2], &[1.0f32, 2.0]).unwrap();
        let e = t.try_extract_array::<i32>().unwrap_err();
        assert!(matches!(e, Error::DTypeMismatch { expected: DType::I32, found: DType::F32 }), "{e}");
        let empty = Tensor::zeros(DType::F32, &[0, 3]);
        assert_eq!(empty.try_extract_array::<f32>().unwrap().shape(), &[0, 3]);
        assert_eq!(Tensor::scalar(7u8).try_extract_array::<u8>().unwrap()[IxDyn(&[])], 7);
    }
}
