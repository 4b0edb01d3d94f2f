//! Values between numpy and vinort.
//!
//! Inputs: a C-contiguous, aligned, native-byte-order numpy array of an element type vinort
//! holds is borrowed as it is ([`vinort::TensorRef`] over the array's memory, under numpy's
//! readonly borrow) — no copy. Any other array (a strided view, Fortran order, big-endian,
//! misaligned) is made contiguous once with `numpy.require`, which is what onnxruntime does
//! too. Strings (`str`, `bytes` and object arrays), sequences (lists) and optionals (`None`)
//! become vinort values.
//!
//! Outputs are copied once into numpy-owned arrays, so a caller may write to them.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use numpy::ndarray::{ArrayD, ArrayViewD, IxDyn};
use numpy::{
    PyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods, ToPyArray,
};
use vinort::{DType, Input, Sequence, Tensor, TensorRef, Value, ValueType};

use crate::errors::{self, InvalidArgument, VinortError};

/// Expands `$m!` with every numeric element type numpy and vinort share, as
/// `(vinort::DType variant and Held variant, Rust element type)` pairs: one table for both
/// directions.
macro_rules! numeric_types {
    ($m:ident) => {
        $m! {
            F32 f32, F64 f64, F16 half::f16,
            I8 i8, I16 i16, I32 i32, I64 i64,
            U8 u8, U16 u16, U32 u32, U64 u64,
            Bool bool,
        }
    };
}

macro_rules! held {
    ($($v:ident $t:ty),* $(,)?) => {
        /// One run input, held for the length of the run: borrowed numpy memory, or a value
        /// made from the Python object.
        pub(crate) enum Held<'py> {
            $($v(PyReadonlyArrayDyn<'py, $t>),)*
            Value(Value),
        }

        impl Held<'_> {
            /// The input as vinort takes it; borrowed arrays stay borrowed.
            pub(crate) fn input(&self) -> PyResult<Input<'_>> {
                match self {
                    $(Held::$v(a) => {
                        let data = a.as_slice().map_err(|e| VinortError::new_err(e.to_string()))?;
                        Ok(TensorRef::from_slice(a.shape(), data).map_err(errors::to_py)?.into())
                    })*
                    Held::Value(v) => Ok(v.clone().into()),
                }
            }

            /// An owned copy (for the elements of sequences and optionals, which vinort holds
            /// as values).
            fn into_value(self) -> PyResult<Value> {
                match self {
                    $(Held::$v(a) => {
                        let data = a.as_slice().map_err(|e| VinortError::new_err(e.to_string()))?;
                        Ok(Value::Tensor(Tensor::from_slice(a.shape(), data).map_err(errors::ir)?))
                    })*
                    Held::Value(v) => Ok(v),
                }
            }
        }

        /// The array borrowed as its element type, when vinort has that type and the array's
        /// memory can be read in place (C order, aligned, native byte order).
        fn borrow<'py>(arr: &Bound<'py, PyUntypedArray>) -> PyResult<Option<Held<'py>>> {
            if !arr.is_c_contiguous() || !arr.is_aligned() {
                return Ok(None);
            }
            $(if let Ok(a) = arr.cast::<PyArrayDyn<$t>>() {
                let a = a.try_readonly().map_err(|e| VinortError::new_err(e.to_string()))?;
                return Ok(Some(Held::$v(a)));
            })*
            Ok(None)
        }

        /// A tensor as a new numpy array (one copy).
        fn tensor_to_numpy(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
            match t.dtype() {
                $(DType::$v => {
                    let aligned;
                    let t = if t.is_aligned() { t } else { aligned = t.to_aligned(); &aligned };
                    let data = t.as_slice::<$t>().map_err(errors::ir)?;
                    let view = ArrayViewD::from_shape(IxDyn(t.shape()), data)
                        .map_err(|e| VinortError::new_err(e.to_string()))?;
                    Ok(view.to_pyarray(py).into_any().unbind())
                })*
                DType::String => strings_to_numpy(py, t),
                other => Err(VinortError::new_err(format!(
                    "an output of element type {other} has no numpy equivalent"
                ))),
            }
        }
    };
}
numeric_types!(held);

/// The run input for `obj`, given the model's declared type of the input `name`.
pub(crate) fn hold<'py>(name: &str, declared: &ValueType, obj: &Bound<'py, PyAny>) -> PyResult<Held<'py>> {
    match declared {
        ValueType::Sequence(item) if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() => {
            let items = obj
                .try_iter()?
                .map(|x| match hold_tensor(name, &x?)?.into_value()? {
                    Value::Tensor(t) => Ok(t),
                    other => Err(invalid(name, format!("a sequence item must be a tensor, got {}", other.kind()))),
                })
                .collect::<PyResult<Vec<Tensor>>>()?;
            let dtype = match (item.tensor_dtype(), items.first()) {
                (Some(d), _) => d,
                (None, Some(t)) => t.dtype(),
                (None, None) => return Err(invalid(name, "an empty sequence of an undeclared element type".into())),
            };
            Ok(Held::Value(Value::Sequence(Sequence { dtype, items })))
        }
        ValueType::Optional(inner) if obj.is_none() => Ok(Held::Value(Value::Optional(None, (**inner).clone()))),
        ValueType::Optional(inner) => {
            let v = hold(name, inner, obj)?.into_value()?;
            Ok(Held::Value(Value::Optional(Some(Box::new(v)), (**inner).clone())))
        }
        _ => hold_tensor(name, obj),
    }
}

/// A tensor input: a numpy array, or anything `numpy.asarray` takes.
fn hold_tensor<'py>(name: &str, obj: &Bound<'py, PyAny>) -> PyResult<Held<'py>> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = match obj.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => np
            .call_method1("asarray", (obj,))
            .map_err(|e| invalid(name, format!("cannot be made a numpy array: {e}")))?
            .cast_into::<PyUntypedArray>()?,
    };
    let dtype = arr.dtype();
    match dtype.kind() {
        b'U' | b'S' | b'O' => return Ok(Held::Value(Value::Tensor(strings(name, &arr)?))),
        b'b' | b'i' | b'u' | b'f' => {}
        _ => return Err(unsupported_dtype(name, &arr)),
    }
    if let Some(h) = borrow(&arr)? {
        return Ok(h);
    }
    // Not readable in place: one contiguous, aligned, native-order copy.
    let native = dtype.call_method1("newbyteorder", ("=",))?;
    let copy = np.call_method1("require", (&arr, native, "CA"))?.cast_into::<PyUntypedArray>()?;
    borrow(&copy)?.ok_or_else(|| unsupported_dtype(name, &arr))
}

/// A string tensor from a `str`, `bytes` or object array.
fn strings(name: &str, arr: &Bound<'_, PyUntypedArray>) -> PyResult<Tensor> {
    let flat = arr.call_method0("ravel")?.call_method0("tolist")?;
    let items = flat
        .try_iter()?
        .map(|x| {
            let x = x?;
            if let Ok(s) = x.cast::<PyString>() {
                Ok(s.to_str()?.to_owned())
            } else if let Ok(b) = x.cast::<PyBytes>() {
                String::from_utf8(b.as_bytes().to_vec())
                    .map_err(|_| invalid(name, "holds bytes that are not UTF-8".into()))
            } else {
                Err(invalid(name, format!("an object array must hold strings, found {}", x.get_type().name()?)))
            }
        })
        .collect::<PyResult<Vec<String>>>()?;
    Tensor::from_strings(arr.shape(), items).map_err(errors::ir)
}

/// A string tensor as a numpy object array of `str`, as onnxruntime returns them.
fn strings_to_numpy(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    let items: Vec<Py<PyAny>> =
        t.as_strings().map_err(errors::ir)?.iter().map(|s| PyString::new(py, s).into_any().unbind()).collect();
    let arr = ArrayD::from_shape_vec(IxDyn(t.shape()), items).map_err(|e| VinortError::new_err(e.to_string()))?;
    Ok(PyArray::from_owned_array(py, arr).into_any().unbind())
}

/// A run output as onnxruntime gives it: a tensor as a numpy array, a sequence as a list of
/// arrays, an empty optional as `None`.
pub(crate) fn to_python(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    match v {
        Value::Tensor(t) => tensor_to_numpy(py, t),
        Value::Sequence(s) => {
            let items = s.items.iter().map(|t| tensor_to_numpy(py, t)).collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any().unbind())
        }
        Value::Optional(None, _) => Ok(py.None()),
        Value::Optional(Some(v), _) => to_python(py, v),
    }
}

fn invalid(name: &str, message: String) -> PyErr {
    InvalidArgument::new_err(format!("input '{name}': {message}"))
}

fn unsupported_dtype(name: &str, arr: &Bound<'_, PyUntypedArray>) -> PyErr {
    let dtype = arr.dtype().str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
    invalid(
        name,
        format!(
            "numpy dtype {dtype} has no vinort element type (supported: float32, float64, float16, \
             int8/16/32/64, uint8/16/32/64, bool, str)"
        ),
    )
}
