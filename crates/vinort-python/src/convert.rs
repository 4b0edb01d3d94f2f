//! Values between numpy and vinort.
//!
//! Inputs: a C-contiguous, aligned, native-byte-order numpy array of an element type vinort
//! holds is borrowed as it is ([`vinort::TensorRef`] over the array's memory, under numpy's
//! readonly borrow) — no copy. Any other array (a strided view, Fortran order, big-endian,
//! misaligned) is made contiguous once with `numpy.require`, which is what onnxruntime does
//! too. A list is made an array of the input's declared element type (onnxruntime does the
//! same); an array of another element type is refused (`InvalidArgument`, as onnxruntime
//! refuses it), and so is any other object (a `RuntimeError`, as in onnxruntime). Strings
//! (`str`, `bytes` and object arrays), sequences (lists) and optionals (`None`) become vinort
//! values.
//!
//! Outputs are copied once into numpy-owned arrays, so a caller may write to them.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use numpy::ndarray::{ArrayD, ArrayViewD, IxDyn};
use numpy::{
    PyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods, ToPyArray,
};
use vinort::{DType, Input, Sequence, Tensor, TensorRef, Value, ValueType};

use crate::errors::{self, InvalidArgument, VinortError};

/// Expands `$m!` with every numeric element type numpy and vinort share, as
/// `(vinort::DType variant and Held variant, Rust element type = numpy dtype name)`: one table
/// for both directions.
macro_rules! numeric_types {
    ($m:ident) => {
        $m! {
            F32 f32 = "float32", F64 f64 = "float64", F16 half::f16 = "float16",
            I8 i8 = "int8", I16 i16 = "int16", I32 i32 = "int32", I64 i64 = "int64",
            U8 u8 = "uint8", U16 u16 = "uint16", U32 u32 = "uint32", U64 u64 = "uint64",
            Bool bool = "bool",
        }
    };
}

macro_rules! held {
    ($($v:ident $t:ty = $np:literal),* $(,)?) => {
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

            /// The shape of a tensor input.
            pub(crate) fn shape(&self) -> Option<Vec<usize>> {
                match self {
                    $(Held::$v(a) => Some(a.shape().to_vec()),)*
                    Held::Value(Value::Tensor(t)) => Some(t.shape().to_vec()),
                    Held::Value(_) => None,
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

        /// An output buffer: a numpy array borrowed writeable for the length of a run.
        pub(crate) enum HeldOut<'py> {
            $($v(PyReadwriteArrayDyn<'py, $t>),)*
        }

        impl<'py> HeldOut<'py> {
            /// Binds the array as the output `name`'s buffer.
            pub(crate) fn bind<'a>(&'a mut self, binding: &mut vinort::Binding<'a>, name: &str) -> PyResult<()> {
                match self {
                    $(HeldOut::$v(a) => {
                        let shape = a.shape().to_vec();
                        let data = a.as_slice_mut().map_err(|e| VinortError::new_err(e.to_string()))?;
                        binding.bind_output(name, &shape, data).map_err(errors::to_py)
                    })*
                }
            }
        }

        /// The array as an output buffer (C order, aligned, writeable, a vinort element type).
        pub(crate) fn hold_output<'py>(name: &str, obj: &Bound<'py, PyAny>) -> PyResult<HeldOut<'py>> {
            let arr = obj.cast::<PyUntypedArray>().map_err(|_| invalid(name, "an output buffer must be a numpy array".into()))?;
            if !arr.is_c_contiguous() || !arr.is_aligned() {
                return Err(invalid(name, "an output buffer must be a C-contiguous, aligned array".into()));
            }
            $(if let Ok(a) = arr.cast::<PyArrayDyn<$t>>() {
                let a = a.try_readwrite().map_err(|e| invalid(name, format!("the output buffer cannot be written: {e}")))?;
                return Ok(HeldOut::$v(a));
            })*
            Err(unsupported_dtype(name, arr))
        }

        /// The numpy dtype name of a vinort element type numpy has.
        fn numpy_name(d: DType) -> Option<&'static str> {
            match d {
                $(DType::$v => Some($np),)*
                _ => None,
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
                .map(|x| match hold_tensor(name, item.tensor_dtype(), &x?)?.into_value()? {
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
        _ => hold_tensor(name, declared.tensor_dtype(), obj),
    }
}

/// A tensor input: a numpy array, a list (made an array of the declared element type, as
/// onnxruntime does), or a `vinort.OrtValue` (its array).
fn hold_tensor<'py>(name: &str, declared: Option<DType>, obj: &Bound<'py, PyAny>) -> PyResult<Held<'py>> {
    let py = obj.py();
    let arr = if let Ok(a) = obj.cast::<PyUntypedArray>() {
        a.clone()
    } else if obj.is_instance_of::<PyList>() {
        let np = py.import(intern!(py, "numpy"))?;
        match declared.and_then(numpy_name) {
            Some(d) => np.call_method1(intern!(py, "asarray"), (obj, d)),
            None => np.call_method1(intern!(py, "asarray"), (obj,)),
        }
        .map_err(|e| invalid(name, format!("cannot be made a numpy array: {e}")))?
        .cast_into::<PyUntypedArray>()?
    } else if let Ok(a) = obj.getattr(intern!(py, "_vinort_array")) {
        a.cast_into::<PyUntypedArray>().map_err(|_| invalid(name, "the OrtValue holds no tensor".into()))?
    } else {
        // onnxruntime raises a plain RuntimeError for scalars, tuples and other objects.
        return Err(VinortError::new_err(format!(
            "Unable to handle object of type {} for input '{name}': give a numpy array or a list",
            obj.get_type().repr()?
        )));
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
    let np = py.import(intern!(py, "numpy"))?;
    let copy = np.call_method1(intern!(py, "require"), (&arr, native, "CA"))?.cast_into::<PyUntypedArray>()?;
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
