//! Node attributes with typed, fallible access.

use std::sync::Arc;

use crate::graph::Graph;
use crate::tensor::Tensor;
use crate::value::ValueType;

/// One ONNX attribute value.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum Attr {
    Float(f32),
    Int(i64),
    String(String),
    Tensor(Tensor),
    Graph(Arc<Graph>),
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Strings(Vec<String>),
    Tensors(Vec<Tensor>),
    Graphs(Vec<Arc<Graph>>),
    Type(ValueType),
    Types(Vec<ValueType>),
}

impl Attr {
    /// The ONNX name of the attribute kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Attr::Float(_) => "float",
            Attr::Int(_) => "int",
            Attr::String(_) => "string",
            Attr::Tensor(_) => "tensor",
            Attr::Graph(_) => "graph",
            Attr::Floats(_) => "floats",
            Attr::Ints(_) => "ints",
            Attr::Strings(_) => "strings",
            Attr::Tensors(_) => "tensors",
            Attr::Graphs(_) => "graphs",
            Attr::Type(_) => "type_proto",
            Attr::Types(_) => "type_protos",
        }
    }
}

/// A Rust type an attribute can be read as.
pub trait FromAttr: Sized {
    /// What the attribute must hold, for errors ("int", "ints"...).
    const EXPECTED: &'static str;
    /// The value, when the attribute has the right kind.
    fn from_attr(a: &Attr) -> Option<Self>;
}

macro_rules! from_attr {
    ($t:ty, $exp:literal, $pat:pat => $e:expr) => {
        impl FromAttr for $t {
            const EXPECTED: &'static str = $exp;
            fn from_attr(a: &Attr) -> Option<Self> {
                match a {
                    $pat => Some($e),
                    _ => None,
                }
            }
        }
    };
}
from_attr!(i64, "int", Attr::Int(v) => *v);
from_attr!(f32, "float", Attr::Float(v) => *v);
from_attr!(String, "string", Attr::String(v) => v.clone());
from_attr!(Vec<i64>, "ints", Attr::Ints(v) => v.clone());
from_attr!(Vec<f32>, "floats", Attr::Floats(v) => v.clone());
from_attr!(Vec<String>, "strings", Attr::Strings(v) => v.clone());
from_attr!(Tensor, "tensor", Attr::Tensor(v) => v.clone());
from_attr!(Vec<Tensor>, "tensors", Attr::Tensors(v) => v.clone());
from_attr!(Arc<Graph>, "graph", Attr::Graph(v) => v.clone());
from_attr!(ValueType, "type_proto", Attr::Type(v) => v.clone());

impl FromAttr for bool {
    const EXPECTED: &'static str = "int (0 or 1)";
    fn from_attr(a: &Attr) -> Option<Self> {
        match a {
            Attr::Int(v) => Some(*v != 0),
            _ => None,
        }
    }
}
