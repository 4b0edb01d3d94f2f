//! Reading `input_K.pb` / `output_K.pb` files.

use std::path::{Path, PathBuf};

use vinort_ir::proto::onnx::{OptionalProto, SequenceProto, TensorProto, sequence_proto};
use vinort_ir::proto::prost::Message;
use vinort_ir::proto::prost::bytes::Bytes;
use vinort_ir::tensor_proto::{ExternalData, tensor_from_proto};
use vinort_ir::{DType, Sequence, Tensor, Value, ValueType};

/// Why a test case or one of its files could not be used. Every variant names the file or
/// folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    /// A file or folder could not be read.
    #[error("cannot read '{}': {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a valid serialized value of the expected kind.
    #[error("'{}': {message}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file holds a kind of value the runner does not handle (maps, nested sequences...).
    #[error("'{}': {message}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is not supported.
        message: String,
    },
    /// A path given to [`discover`](super::discover) is not a test case nor a folder of them,
    /// or a case folder's files are inconsistent.
    #[error("'{}': {message}", path.display())]
    Layout {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Reads a serialized ONNX value, choosing the message by the declared type: `TensorProto`
/// for tensors (and for unknown types), `SequenceProto` for sequences, `OptionalProto` for
/// optionals. Maps are refused. Tensors are returned with aligned storage.
pub fn read_value(path: &Path, ty: &ValueType) -> Result<Value, CaseError> {
    let bytes = Bytes::from(std::fs::read(path).map_err(|source| CaseError::Io { path: path.into(), source })?);
    let decode = |what: &str, e: vinort_ir::proto::prost::DecodeError| CaseError::Decode {
        path: path.into(),
        message: format!("not a valid serialized {what}: {e}"),
    };
    match ty {
        ValueType::Sequence(inner) => {
            let p = SequenceProto::decode(bytes).map_err(|e| decode("SequenceProto", e))?;
            Ok(Value::Sequence(sequence(path, &p, inner)?))
        }
        ValueType::Optional(inner) => {
            let p = OptionalProto::decode(bytes).map_err(|e| decode("OptionalProto", e))?;
            optional(path, &p, inner)
        }
        ValueType::Map(..) => Err(CaseError::Unsupported {
            path: path.into(),
            message: format!("the model declares this value as {ty}; map values are not supported"),
        }),
        ValueType::Tensor(..) | ValueType::Unknown => {
            let p = TensorProto::decode(bytes).map_err(|e| decode("TensorProto", e))?;
            Ok(Value::Tensor(tensor(path, &p, "")?))
        }
    }
}

/// A `TensorProto` file (`input_0.pb`, a `--input` file): the name it records, and the tensor
/// with aligned storage.
pub fn read_tensor(path: &Path) -> Result<(String, Tensor), CaseError> {
    let bytes = Bytes::from(std::fs::read(path).map_err(|source| CaseError::Io { path: path.into(), source })?);
    let p = TensorProto::decode(bytes).map_err(|e| CaseError::Decode {
        path: path.into(),
        message: format!("not a valid serialized TensorProto: {e}"),
    })?;
    Ok((p.name.clone().unwrap_or_default(), tensor(path, &p, "")?))
}

/// `{prefix}_0.pb`, `{prefix}_1.pb`, ... of a data set folder as [`read_tensor`] reads them,
/// up to the first missing number (`read_tensors(dir, "input")`).
pub fn read_tensors(dir: &Path, prefix: &str) -> Result<Vec<(String, Tensor)>, CaseError> {
    (0..).map(|i| dir.join(format!("{prefix}_{i}.pb"))).take_while(|p| p.exists()).map(|p| read_tensor(&p)).collect()
}

fn tensor(path: &Path, p: &TensorProto, what: &str) -> Result<Tensor, CaseError> {
    // Test data never has external data: there is no model folder to resolve it against.
    tensor_from_proto(p, &ExternalData::new(None))
        .map(|t| t.to_aligned())
        .map_err(|e| CaseError::Decode { path: path.into(), message: format!("{what}{e}") })
}

fn unsupported(path: &Path, message: String) -> CaseError {
    CaseError::Unsupported { path: path.into(), message }
}

fn sequence(path: &Path, p: &SequenceProto, declared: &ValueType) -> Result<Sequence, CaseError> {
    use sequence_proto::DataType as D;
    let elem = p.elem_type.unwrap_or(0);
    let other_kind = [
        (!p.sparse_tensor_values.is_empty(), "sparse tensors"),
        (!p.sequence_values.is_empty(), "sequences"),
        (!p.map_values.is_empty(), "maps"),
        (!p.optional_values.is_empty(), "optionals"),
    ]
    .into_iter()
    .find(|(present, _)| *present)
    .map(|(_, name)| name)
    .or(match D::try_from(elem) {
        Ok(D::Tensor | D::Undefined) => None,
        Ok(D::SparseTensor) => Some("sparse tensors"),
        Ok(D::Sequence) => Some("sequences"),
        Ok(D::Map) => Some("maps"),
        Ok(D::Optional) => Some("optionals"),
        Err(_) => Some("an unknown element kind"),
    });
    if let Some(kind) = other_kind {
        return Err(unsupported(path, format!("a sequence of {kind}; only sequences of tensors are supported")));
    }
    let items = p
        .tensor_values
        .iter()
        .enumerate()
        .map(|(i, t)| tensor(path, t, &format!("sequence item {i}: ")))
        .collect::<Result<Vec<Tensor>, CaseError>>()?;
    let dtype: DType = match (items.first(), declared.tensor_dtype()) {
        (Some(t), _) => t.dtype(),
        (None, Some(d)) => d,
        (None, None) => {
            return Err(CaseError::Decode {
                path: path.into(),
                message: "an empty sequence, and the model does not declare its element type".into(),
            });
        }
    };
    if let Some((i, t)) = items.iter().enumerate().find(|(_, t)| t.dtype() != dtype) {
        return Err(CaseError::Decode {
            path: path.into(),
            message: format!("sequence item {i} is {}, but item 0 is {dtype}", t.dtype()),
        });
    }
    Ok(Sequence { dtype, items })
}

fn optional(path: &Path, p: &OptionalProto, inner: &ValueType) -> Result<Value, CaseError> {
    let content = if let Some(t) = &p.tensor_value {
        Some(Value::Tensor(tensor(path, t, "optional value: ")?))
    } else if let Some(s) = &p.sequence_value {
        let declared = match inner {
            ValueType::Sequence(e) => e.as_ref(),
            _ => &ValueType::Unknown,
        };
        Some(Value::Sequence(sequence(path, s, declared)?))
    } else if p.map_value.is_some() {
        return Err(unsupported(path, "an optional map; map values are not supported".into()));
    } else if p.sparse_tensor_value.is_some() {
        return Err(unsupported(path, "an optional sparse tensor; sparse tensors are not supported".into()));
    } else if p.optional_value.is_some() {
        return Err(unsupported(path, "an optional of an optional is not supported".into()));
    } else {
        // No value at all is ONNX's empty optional, whatever elem_type says.
        None
    };
    Ok(Value::Optional(content.map(Box::new), inner.clone()))
}
