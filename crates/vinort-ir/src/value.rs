//! Run-time values, following ONNX's type system: tensors, sequences of tensors, optionals.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The values one step (a kernel, a partition) produces: inline up to three, so the common
/// one-output kernel returns its result without a heap allocation.
pub type Values = smallvec::SmallVec<[Value; 3]>;

/// A value flowing along a graph edge.
#[derive(Clone, Debug)]
pub enum Value {
    /// A dense tensor.
    Tensor(Tensor),
    /// A sequence of tensors sharing one element type (ONNX `seq(tensor(T))`).
    Sequence(Sequence),
    /// An optional value: `None` is ONNX's empty optional, carrying its declared type.
    Optional(Option<Box<Value>>, ValueType),
}

/// A sequence of tensors. Its element type is known even when it is empty.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// Element type of every tensor.
    pub dtype: DType,
    /// The tensors.
    pub items: Vec<Tensor>,
}

/// The type of a value, as far as it is known ahead of running.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueType {
    /// A tensor of an element type and a shape (None when the rank is unknown).
    Tensor(DType, Option<Vec<Dim>>),
    /// A sequence whose elements have this type.
    Sequence(Box<ValueType>),
    /// An optional of this type.
    Optional(Box<ValueType>),
    /// A map (from `ai.onnx.ml`) from a key type to a value type.
    Map(DType, Box<ValueType>),
    /// Not known.
    Unknown,
}

/// One dimension of a declared or inferred shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A known extent.
    Fixed(usize),
    /// A named symbolic dimension (`batch`, `seq`).
    Symbol(String),
    /// Unknown.
    Unknown,
}

impl Dim {
    /// The number of elements of `dims` when every one is fixed and the product fits in
    /// `usize` (declared dims are the model's word, and can be anything).
    pub fn fixed_product(dims: &[Dim]) -> Option<usize> {
        dims.iter().try_fold(1usize, |a, d| a.checked_mul(d.fixed()?))
    }

    /// The extent when known.
    pub fn fixed(&self) -> Option<usize> {
        match self {
            Dim::Fixed(n) => Some(*n),
            _ => None,
        }
    }

    /// Could shapes `a` and `b` describe the same tensor? An unknown shape (`None`) agrees with
    /// any; known ones need equal ranks, and equal extents wherever both are fixed.
    pub fn shapes_agree(a: Option<&[Dim]>, b: Option<&[Dim]>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.fixed().zip(q.fixed()).is_none_or(|(p, q)| p == q))
            }
            _ => true,
        }
    }
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbol(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

impl ValueType {
    /// A tensor type with a fully known shape.
    pub fn tensor(dtype: DType, shape: &[usize]) -> ValueType {
        ValueType::Tensor(dtype, Some(shape.iter().map(|d| Dim::Fixed(*d)).collect()))
    }

    /// The tensor element type, if this is a tensor type.
    pub fn tensor_dtype(&self) -> Option<DType> {
        match self {
            ValueType::Tensor(d, _) => Some(*d),
            _ => None,
        }
    }

    /// The tensor shape when this is a tensor type of known rank.
    pub fn tensor_shape(&self) -> Option<&[Dim]> {
        match self {
            ValueType::Tensor(_, Some(s)) => Some(s),
            _ => None,
        }
    }

    /// The fully known static shape, if every dim is fixed.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        self.tensor_shape()?.iter().map(Dim::fixed).collect()
    }

    /// True for a tensor type.
    pub fn is_tensor(&self) -> bool {
        matches!(self, ValueType::Tensor(..))
    }

    /// True for a sequence type.
    pub fn is_sequence(&self) -> bool {
        matches!(self, ValueType::Sequence(_))
    }

    /// True for a map type.
    pub fn is_map(&self) -> bool {
        matches!(self, ValueType::Map(..))
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueType::Tensor(d, Some(s)) => {
                write!(f, "{d}[")?;
                for (i, x) in s.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            ValueType::Tensor(d, None) => write!(f, "{d}[...]"),
            ValueType::Sequence(t) => write!(f, "seq({t})"),
            ValueType::Optional(t) => write!(f, "optional({t})"),
            ValueType::Map(k, v) => write!(f, "map({k},{v})"),
            ValueType::Unknown => f.write_str("?"),
        }
    }
}

impl Value {
    /// A short name of the kind, for errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "a tensor",
            Value::Sequence(_) => "a sequence",
            Value::Optional(..) => "an optional",
        }
    }

    /// The tensor, or an error naming what this is instead.
    pub fn as_tensor(&self) -> Result<&Tensor> {
        match self {
            Value::Tensor(t) => Ok(t),
            other => Err(Error::ValueKind { expected: "a tensor", found: other.kind() }),
        }
    }

    /// The tensor by value.
    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            Value::Tensor(t) => Ok(t),
            other => Err(Error::ValueKind { expected: "a tensor", found: other.kind() }),
        }
    }

    /// The tensor's shape and elements as `T` ([`Tensor::try_extract_tensor`]); an error
    /// when this is not a tensor of `T`.
    pub fn try_extract_tensor<T: crate::Elem>(&self) -> Result<(&[usize], &[T])> {
        self.as_tensor()?.try_extract_tensor()
    }

    /// The string tensor's shape and strings ([`Tensor::try_extract_strings`]).
    pub fn try_extract_strings(&self) -> Result<(&[usize], &[String])> {
        self.as_tensor()?.try_extract_strings()
    }

    /// The one element of a one-element tensor of `T` ([`Tensor::try_extract_scalar`]).
    pub fn try_extract_scalar<T: crate::Elem>(&self) -> Result<T> {
        self.as_tensor()?.try_extract_scalar()
    }

    /// The tensor as an `ndarray` view of `T`, without a copy ([`Tensor::try_extract_array`]).
    #[cfg(feature = "ndarray")]
    pub fn try_extract_array<T: crate::Elem>(&self) -> Result<ndarray::ArrayViewD<'_, T>> {
        self.as_tensor()?.try_extract_array()
    }

    /// The sequence, or an error.
    pub fn as_sequence(&self) -> Result<&Sequence> {
        match self {
            Value::Sequence(s) => Ok(s),
            other => Err(Error::ValueKind { expected: "a sequence", found: other.kind() }),
        }
    }

    /// This value's type as far as it shows (shapes fixed).
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Tensor(t) => ValueType::tensor(t.dtype(), t.shape()),
            Value::Sequence(s) => ValueType::Sequence(Box::new(ValueType::Tensor(s.dtype, None))),
            Value::Optional(Some(v), _) => ValueType::Optional(Box::new(v.value_type())),
            Value::Optional(None, t) => ValueType::Optional(Box::new(t.clone())),
        }
    }

    /// Replaces caller-borrowed storage anywhere inside with owned copies.
    pub fn detach_borrowed(self) -> Value {
        match self {
            Value::Tensor(t) => Value::Tensor(t.detach_borrowed()),
            Value::Sequence(s) => Value::Sequence(Sequence {
                dtype: s.dtype,
                items: s.items.into_iter().map(Tensor::detach_borrowed).collect(),
            }),
            Value::Optional(v, t) => Value::Optional(v.map(|v| Box::new(v.detach_borrowed())), t),
        }
    }
}

impl From<Tensor> for Value {
    fn from(t: Tensor) -> Value {
        Value::Tensor(t)
    }
}
