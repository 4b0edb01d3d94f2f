//! Sessions that share their compiled form ([`Environment`]).

use std::path::Path;
use std::sync::Arc;

use super::{Inner, LogLevel, Runtime, Session, SessionBuilder, logs};
use crate::config::Prepared;
use crate::error::{Error, Result};

/// Sessions that share what they can, like ONNX Runtime's `Environment` with shared
/// allocators and `ep.share_ep_contexts`: a session of a model file built through an
/// environment where a live session of the same file (same size and modification time) with
/// equal providers (see [`ExecutionProvider::fingerprint`](crate::ir::ExecutionProvider::fingerprint))
/// exists shares it whole: the mapped model, the Cpu provider's packed weights, and the
/// OpenVINO compiled models with their infer-request pools (OpenVINO sizes a pool to what the
/// device runs at once, so a second pool would only oversubscribe it). Nothing is compiled
/// again, and the second session adds almost no memory. Sessions are kept weakly: once every
/// session of a model is dropped, the next one is built afresh.
///
/// ```
/// # fn main() -> Result<(), vinort::Error> {
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
/// let env = vinort::Environment::new();
/// let a = env.load(model)?.providers([vinort::Cpu::default().into()]).build()?;
/// let b = env.load(model)?.providers([vinort::Cpu::default().into()]).build()?;
/// assert!(a.shares_with(&b));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Environment {
    sessions: Arc<std::sync::Mutex<Vec<LiveSession>>>,
}

/// A session an environment built, held weakly, with what makes it that session.
type LiveSession = (SessionKey, std::sync::Weak<Inner>);

#[derive(Debug, Clone, PartialEq)]
struct SessionKey {
    file: std::path::PathBuf,
    len: u64,
    modified: Option<std::time::SystemTime>,
    providers: Vec<String>,
    memory_limit: Option<usize>,
    dims: Vec<(String, usize)>,
    /// ONNX Runtime session config entries (`session.cost_model`, `ep.context_*`…).
    config: Vec<(String, String)>,
}

impl Environment {
    /// An environment with no sessions yet.
    pub fn new() -> Environment {
        Environment::default()
    }

    /// Loads a model file for a session of this environment (see [`Runtime::load`]).
    pub fn load(&self, path: impl AsRef<Path>) -> Result<SessionBuilder> {
        let path = path.as_ref();
        let file = std::fs::canonicalize(path)
            .map_err(|source| Error::Model(vinort_ir::Error::Io { path: path.to_owned(), source }))?;
        // Mapped again here; when a live session is shared at build, this mapping is dropped.
        let mut b = Runtime::load(&file)?;
        b.env = Some(self.clone());
        Ok(b)
    }

    /// Number of live sessions it holds.
    pub fn live_sessions(&self) -> usize {
        let mut s = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        s.retain(|(_, w)| w.strong_count() > 0);
        s.len()
    }
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Environment({} live session(s))", self.live_sessions())
    }
}

impl SessionBuilder {
    /// Builds through `env`: an equal live session is shared, else this one is built and
    /// kept. Builds of one environment are serialized, so two threads asking for the same
    /// session build it once.
    pub(super) fn build_shared(self, env: &Environment, prepared: Prepared) -> Result<Session> {
        let key = self.key().filter(|_| prepared.profiler.is_none());
        let mut sessions = env.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.retain(|(_, w)| w.strong_count() > 0);
        if let Some(key) = &key
            && let Some(inner) = sessions.iter().find(|(k, _)| k == key).and_then(|(_, w)| w.upgrade())
        {
            if logs(LogLevel::Info) {
                tracing::info!(model = %key.file.display(), "session shared with a live one of the environment");
            }
            return Ok(Session { inner });
        }
        let session = self.build_session(prepared)?;
        if let Some(key) = key {
            sessions.push((key, Arc::downgrade(&session.inner)));
        }
        Ok(session)
    }

    /// What makes two sessions the same: the file (path, size, modification time), the
    /// providers' fingerprints, the fixed dims and the session config entries. `None` for a model not from a file.
    fn key(&self) -> Option<SessionKey> {
        let file = self.model.path.clone()?;
        let meta = std::fs::metadata(&file).ok()?;
        let providers =
            if self.providers.is_empty() { vec![crate::Cpu::default().into()] } else { self.providers.clone() };
        Some(SessionKey {
            file,
            len: meta.len(),
            modified: meta.modified().ok(),
            providers: providers.iter().map(|p| format!("{} {}", p.error_on_failure, p.ep.fingerprint())).collect(),
            memory_limit: self.memory_limit,
            dims: self.dims.clone(),
            config: self.config.clone(),
        })
    }
}
