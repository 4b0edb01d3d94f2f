//! Registering execution providers, in the style of `ort`'s `with_execution_providers`.

use std::sync::Arc;

use vinort_ir::ExecutionProvider;

/// An execution provider registered with a session, with its failure policy.
///
/// A provider that cannot start is skipped with a warning in the session's plan by default,
/// like `ort`; [`Provider::error_on_failure`] makes that an error instead.
#[derive(Debug, Clone)]
pub struct Provider {
    pub(crate) ep: Arc<dyn ExecutionProvider>,
    pub(crate) error_on_failure: bool,
}

impl Provider {
    /// Wraps any execution provider.
    pub fn new(ep: impl ExecutionProvider + 'static) -> Provider {
        Provider { ep: Arc::new(ep), error_on_failure: false }
    }

    /// Fail the session build if this provider cannot start, instead of skipping it.
    pub fn error_on_failure(mut self) -> Provider {
        self.error_on_failure = true;
        self
    }

    /// The provider's name.
    pub fn name(&self) -> String {
        self.ep.name()
    }
}

/// The Cpu provider: Rust kernels (rayon + SIMD) for every op it implements. Put it last so it
/// takes what the providers before it leave.
///
/// ```
/// let p: vinort::Provider = vinort::Cpu::default().into();
/// assert_eq!(p.name(), "Cpu");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cpu {
    _private: (),
}

impl Cpu {
    /// Every op the Cpu provider has a kernel for (`domain::Op`, default domain bare).
    pub fn supported_ops() -> Vec<String> {
        vinort_cpu::CpuProvider::supported_ops()
    }
}

impl From<Cpu> for Provider {
    fn from(_: Cpu) -> Provider {
        Provider::new(vinort_cpu::CpuProvider::default())
    }
}
