//! The public error type.

use std::fmt;

/// Result with vinort's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One node no provider would take, with every provider's reason.
#[derive(Debug, Clone)]
pub struct RefusedNode {
    /// Node name.
    pub node: String,
    /// Op type.
    pub op_type: String,
    /// Domain ("" for the default ONNX domain).
    pub domain: String,
    /// Opset version of the domain in force.
    pub opset: i64,
    /// `(provider, reason)` for each provider that was asked.
    pub reasons: Vec<(String, String)>,
}

impl fmt::Display for RefusedNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let domain = if self.domain.is_empty() { "ai.onnx" } else { &self.domain };
        write!(f, "node '{}' ({} of {domain}, opset {})", self.node, self.op_type, self.opset)?;
        for (p, r) in &self.reasons {
            write!(f, "; {p}: {r}")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong loading, building or running a session. Each kind of failure
/// is its own variant, so callers can tell a malformed model ([`Error::Model`]), an op nobody
/// runs ([`Error::UnsupportedNodes`]), a bad option ([`Error::Option`]), a bad run input
/// ([`Error::Input`]) and a provider's failure ([`Error::Provider`], e.g. OpenVINO's status
/// and message) apart; wrapped causes stay reachable through `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file cannot be read, is not ONNX, or breaks ONNX's rules.
    #[error(transparent)]
    Model(vinort_ir::Error),
    /// Some nodes can be run by none of the providers.
    #[error("{} node(s) cannot be run by any provider:\n{}", .0.len(), .0.iter().map(|n| format!("  - {n}")).collect::<Vec<_>>().join("\n"))]
    UnsupportedNodes(Vec<RefusedNode>),
    /// A provider could not start and the registration said to fail.
    #[error("execution provider {provider} could not start: {source}")]
    ProviderUnavailable {
        /// Provider name.
        provider: String,
        /// Why.
        source: vinort_ir::Error,
    },
    /// A provider failed compiling or running a partition (an OpenVINO status, a Cpu kernel's
    /// error); the failure is the source.
    #[error("{provider}{}: {source}", vinort_ir::error::at_node(.node.as_deref(), .op.as_deref()))]
    Provider {
        /// Provider name.
        provider: String,
        /// The node it was working on, when there is one.
        node: Option<String>,
        /// That node's op type.
        op: Option<String>,
        /// What went wrong.
        source: vinort_ir::error::BoxError,
    },
    /// A provider option is unknown or has an invalid value.
    #[error(transparent)]
    Option(#[from] vinort_openvino::options::OptionError),
    /// A run input is wrong (missing, unknown, wrong dtype or shape).
    #[error("input '{name}': {message}")]
    Input {
        /// Input name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The run stopped before its end: [`crate::RunOptions::terminate`] was called or its
    /// timeout passed. The session stays usable.
    #[error("run{} stopped: {reason}", .tag.as_deref().map(|t| format!(" '{t}'")).unwrap_or_default())]
    Cancelled {
        /// Terminated or past the deadline.
        reason: vinort_ir::StopReason,
        /// The run's tag, when it had one.
        tag: Option<String>,
    },
    /// A tensor the model or the caller asks for is larger than a memory limit allows
    /// ([`crate::SessionBuilder::memory_limit`], [`vinort_ir::limits`]): at build for a value
    /// whose shape is known, at run for a tensor a kernel was about to allocate.
    #[error("{}{}", node_prefix(.node.as_deref(), .op.as_deref()), .refused)]
    MemoryLimit {
        /// The node whose output it is, when known.
        node: Option<String>,
        /// That node's op type.
        op: Option<String>,
        /// The size and the limit.
        refused: vinort_ir::limits::Refused,
    },
    /// The session was configured wrongly (no providers...).
    #[error("session configuration: {0}")]
    Config(String),
    /// Running the graph failed outside any provider (a value of the wrong kind...).
    #[error(transparent)]
    Ir(vinort_ir::Error),
}

impl From<vinort_ir::Error> for Error {
    /// A provider's failure becomes [`Error::Provider`] (the node named in the provider's
    /// error moves up); everything else stays an IR error.
    fn from(e: vinort_ir::Error) -> Error {
        match e {
            vinort_ir::Error::Stopped(reason) => Error::Cancelled { reason, tag: None },
            // A stop raised inside a provider's wrapped error is still a stop.
            vinort_ir::Error::MemoryLimit(refused) => Error::MemoryLimit { node: None, op: None, refused },
            vinort_ir::Error::Provider { provider, node, op, source } => {
                match source.downcast_ref::<vinort_ir::Error>() {
                    Some(vinort_ir::Error::Stopped(reason)) => Error::Cancelled { reason: *reason, tag: None },
                    Some(vinort_ir::Error::MemoryLimit(refused)) => Error::MemoryLimit { node, op, refused: *refused },
                    _ => Error::Provider { provider, node, op, source },
                }
            }
            e => Error::Ir(e),
        }
    }
}

/// `node 'name' (op): ` before a message about that node, empty without one.
fn node_prefix(node: Option<&str>, op: Option<&str>) -> String {
    match (node, op) {
        (Some(n), Some(op)) => format!("node '{n}' ({op}): "),
        (Some(n), None) => format!("node '{n}': "),
        _ => String::new(),
    }
}
