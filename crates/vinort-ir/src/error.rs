//! Errors of loading, validating and running a graph.

use std::path::PathBuf;

use crate::dtype::DType;

/// Result with vinort's IR error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong below the public API, each naming what is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes are not a valid ONNX protobuf.
    #[error("not a valid ONNX model: {0}")]
    Decode(String),
    /// The model is well-formed protobuf but breaks ONNX's rules.
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// A node is wrong (dangling input, duplicate output, cycle, bad attribute...).
    #[error("node '{node}' ({op}): {message}")]
    Node {
        /// Node name (or a generated `op_index` name when the model gives none).
        node: String,
        /// Op type, with domain when not the default one.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor (initializer, Constant value) is wrong.
    #[error("tensor '{tensor}': {message}")]
    Tensor {
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor's external data cannot be used.
    #[error("external data of tensor '{tensor}': {message}")]
    ExternalData {
        /// Tensor name.
        tensor: String,
        /// What is wrong (escaping path, missing file, out of range...).
        message: String,
    },
    /// A typed access asked for the wrong element type.
    #[error("expected a {expected} tensor, got {found}")]
    DTypeMismatch {
        /// Asked for.
        expected: DType,
        /// Actually stored.
        found: DType,
    },
    /// Shared bytes are not aligned for typed access; use `Tensor::to_aligned`.
    #[error("{dtype} tensor bytes are not aligned for typed access")]
    Misaligned {
        /// The element type.
        dtype: DType,
    },
    /// A value of the wrong kind (tensor, sequence, optional) was given.
    #[error("expected {expected}, got {found}")]
    ValueKind {
        /// Kind expected.
        expected: &'static str,
        /// Kind given.
        found: &'static str,
    },
    /// A run-time failure with an explanation (kernel arguments, shapes...).
    #[error("{0}")]
    Invalid(String),
    /// A provider found, while compiling a partition, nodes it cannot run after all (a wrong
    /// capability answer). The session moves them to the next provider and partitions again.
    #[error("provider refused {} node(s) at compile time", .0.len())]
    RefusedAtCompile(Vec<(petgraph::graph::NodeIndex, String)>),
    /// The run stopped before its end: terminated by the caller or past its deadline.
    #[error("stopped: {0}")]
    Stopped(crate::provider::StopReason),
    /// A tensor the model or caller asked for is larger than a memory limit allows (see
    /// [`crate::limits`]).
    #[error("{0}")]
    MemoryLimit(crate::limits::Refused),
    /// Something is not supported (by a kernel, a provider or this version).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A provider failed compiling or running part of the graph; the failure is kept as the
    /// source (an OpenVINO status with OpenVINO's message, a kernel's error...).
    #[error("{provider}{}: {source}", at_node(.node.as_deref(), .op.as_deref()))]
    Provider {
        /// The provider (`Cpu`, `OpenVINO`).
        provider: String,
        /// The node it was working on, when there is one.
        node: Option<String>,
        /// That node's op type, with domain when not the default one.
        op: Option<String>,
        /// What went wrong.
        source: BoxError,
    },
}

/// Any error a provider reports, kept whole so callers can walk its `source()` chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `, node 'name' (op)` for messages about a failure at a node, empty without one.
pub fn at_node(node: Option<&str>, op: Option<&str>) -> String {
    match (node, op) {
        (Some(n), Some(op)) => format!(", node '{n}' ({op})"),
        (Some(n), None) => format!(", node '{n}'"),
        _ => String::new(),
    }
}

impl Error {
    /// An [`Error::Invalid`] from anything printable.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::Invalid(msg.into())
    }

    /// An [`Error::Provider`] for a failure of `provider` at `node`.
    pub fn provider(provider: impl Into<String>, node: Option<&crate::Node>, source: impl Into<BoxError>) -> Error {
        Error::Provider {
            provider: provider.into(),
            node: node.map(|n| n.name.clone()),
            op: node.map(crate::Node::qualified_op),
            source: source.into(),
        }
    }

    /// An [`Error::Decode`] from prost's error, whose path through nested messages is cut
    /// to its ends: a file nested a hundred levels deep would print every one of them.
    pub fn decode(e: &prost::DecodeError) -> Error {
        let text = e.to_string();
        let parts: Vec<&str> = text.split(": ").collect();
        if parts.len() <= 8 {
            return Error::Decode(text);
        }
        let (head, tail) = (&parts[..3], &parts[parts.len() - 3..]);
        Error::Decode(format!("{}: … {} levels … : {}", head.join(": "), parts.len() - 6, tail.join(": ")))
    }

    /// An [`Error::Unsupported`] from anything printable.
    pub fn unsupported(msg: impl Into<String>) -> Error {
        Error::Unsupported(msg.into())
    }
}
