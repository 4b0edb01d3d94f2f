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

/// Everything that can go wrong loading, building or running a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Loading, validating or running the graph failed.
    #[error(transparent)]
    Ir(#[from] vinort_ir::Error),
    /// Some nodes can be run by none of the providers.
    #[error("{} node(s) cannot be run by any provider:\n{}", .0.len(), .0.iter().map(|n| format!("  - {n}")).collect::<Vec<_>>().join("\n"))]
    UnsupportedNodes(Vec<RefusedNode>),
    /// A provider could not start and the registration said to fail.
    #[error("execution provider {provider} could not start: {reason}")]
    ProviderUnavailable {
        /// Provider name.
        provider: String,
        /// Why.
        reason: String,
    },
    /// A run input is wrong (missing, unknown, wrong dtype or shape).
    #[error("input '{name}': {message}")]
    Input {
        /// Input name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The session was configured wrongly (no providers...).
    #[error("session configuration: {0}")]
    Config(String),
}
