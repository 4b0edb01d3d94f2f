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
    /// The Cpu provider's settings, kept so the session builder's knobs
    /// ([`crate::SessionBuilder::intra_threads`], [`crate::SessionBuilder::optimization_level`])
    /// can apply to it.
    pub(crate) cpu: Option<vinort_cpu::CpuProvider>,
}

impl Provider {
    /// Wraps any execution provider.
    pub fn new(ep: impl ExecutionProvider + 'static) -> Provider {
        Provider { ep: Arc::new(ep), error_on_failure: false, cpu: None }
    }

    /// This provider with the session-wide Cpu settings applied, when it is the Cpu provider.
    pub(crate) fn with_cpu_settings(self, settings: SessionCpuSettings) -> Provider {
        let SessionCpuSettings { threads, level, sleep_between_kernels } = settings;
        match &self.cpu {
            Some(cpu) if threads.is_some() || level.is_some() || sleep_between_kernels => {
                let mut cpu = cpu.clone();
                cpu.threads = threads.map(|n| n.max(1)).or(cpu.threads);
                cpu.optimization = level.unwrap_or(cpu.optimization);
                cpu.sleep_between_kernels |= sleep_between_kernels;
                Provider { ep: Arc::new(cpu.clone()), error_on_failure: self.error_on_failure, cpu: Some(cpu) }
            }
            _ => self,
        }
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

/// The session builder's settings that apply to a registered Cpu provider.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SessionCpuSettings {
    /// [`crate::SessionBuilder::intra_threads`].
    pub threads: Option<usize>,
    /// [`crate::SessionBuilder::optimization_level`].
    pub level: Option<GraphOptimizationLevel>,
    /// Session config `session.intra_op.allow_spinning=0`.
    pub sleep_between_kernels: bool,
}

/// The Cpu provider: Rust kernels (rayon + SIMD) for every op it implements. Put it last so it
/// takes what the providers before it leave.
///
/// ```
/// let p: vinort::Provider = vinort::Cpu::default().into();
/// assert_eq!(p.name(), "Cpu");
/// ```
///
/// Its graph optimizer rewrites the partitions it compiles (constant folding, Conv +
/// BatchNormalization, GELU, and Conv/Gemm/MatMul + bias + residual + activation fusion), as
/// ONNX Runtime's graph optimization levels do; it never changes what other providers get.
///
/// ```
/// use vinort::{Cpu, GraphOptimizationLevel};
///
/// // Debugging a suspected optimizer bug: run every node as written, on 4 threads.
/// let p: vinort::Provider = Cpu::default().optimization(GraphOptimizationLevel::Disabled).threads(4).into();
/// assert_eq!(p.name(), "Cpu");
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Cpu {
    inner: vinort_cpu::CpuProvider,
}

impl Cpu {
    /// Every op the Cpu provider has a kernel for (`domain::Op`, default domain bare).
    pub fn supported_ops() -> Vec<String> {
        vinort_cpu::CpuProvider::supported_ops()
    }

    /// How much the graph optimizer rewrites (default [`GraphOptimizationLevel::All`]).
    pub fn optimization(mut self, level: GraphOptimizationLevel) -> Cpu {
        self.inner.optimization = level;
        self
    }

    /// Intra-op threads: the Cpu kernels run on a pool of `n` threads (shared by every session
    /// asking for the same number). By default they run on rayon's global pool, which has one
    /// thread per logical CPU unless `RAYON_NUM_THREADS` says otherwise.
    pub fn threads(mut self, n: usize) -> Cpu {
        self.inner.threads = Some(n.max(1));
        self
    }

    /// Whether the pool's other threads poll for work through a run (`true`, the default,
    /// as ONNX Runtime's spinning threads) or sleep between kernels (`false`: for a process
    /// whose cores are busy with other work; each parallel kernel then pays its threads'
    /// wake-ups). Session config `session.intra_op.allow_spinning=0` sets `false` too.
    ///
    /// ```
    /// let p: vinort::Provider = vinort::Cpu::default().spinning(false).into();
    /// assert_eq!(p.name(), "Cpu");
    /// ```
    pub fn spinning(mut self, on: bool) -> Cpu {
        self.inner.sleep_between_kernels = !on;
        self
    }
}

/// How much the Cpu provider's graph optimizer rewrites, like ONNX Runtime's
/// `GraphOptimizationLevel`.
pub use vinort_cpu::optimize::OptLevel as GraphOptimizationLevel;

impl From<Cpu> for Provider {
    fn from(c: Cpu) -> Provider {
        Provider { cpu: Some(c.inner.clone()), ..Provider::new(c.inner) }
    }
}

/// The OpenVINO provider, configured like ONNX Runtime's OpenVINO execution provider.
///
/// ```no_run
/// use vinort::{Cpu, OpenVino, Runtime};
/// use vinort::openvino::Precision;
///
/// let session = Runtime::load("model.onnx")?
///     .providers([OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()])
///     .build()?;
/// # Ok::<(), vinort::Error>(())
/// ```
///
/// The library `libopenvino_c` is found at run time: [`OpenVino::library_path`], then the
/// `VINORT_OPENVINO_LIB` environment variable, then the `openvino` package of the Python on
/// `PATH`, then system locations. When it is missing the provider is skipped with a warning in
/// the session plan, unless registered with [`Provider::error_on_failure`].
#[derive(Debug, Clone, Default)]
pub struct OpenVino {
    options: vinort_openvino::options::OpenVinoOptions,
    library: Option<std::path::PathBuf>,
}

impl OpenVino {
    /// OpenVINO on the CPU device (FP32 unless another precision is set).
    pub fn cpu() -> OpenVino {
        OpenVino::default()
    }

    /// OpenVINO on a device string: `CPU`, `GPU`, `GPU.1`, `NPU`, `AUTO:GPU,CPU`, `HETERO:GPU,CPU`,
    /// `MULTI:GPU,CPU`.
    pub fn device(device: &str) -> Result<OpenVino, crate::Error> {
        let mut o = OpenVino::default();
        o.options.set("device_type", device).map_err(crate::Error::Option)?;
        Ok(o)
    }

    /// From fully built options.
    pub fn with_options(options: vinort_openvino::options::OpenVinoOptions) -> OpenVino {
        OpenVino { options, library: None }
    }

    /// From ORT-style string options (`device_type`, `precision`, `num_streams`, ...).
    pub fn from_key_values<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<OpenVino, crate::Error> {
        let mut o = OpenVino::default();
        for (k, v) in pairs {
            o.options.set(k, v).map_err(crate::Error::Option)?;
        }
        Ok(o)
    }

    /// Sets one ORT-style option by name.
    pub fn set(mut self, key: &str, value: &str) -> Result<OpenVino, crate::Error> {
        self.options.set(key, value).map_err(crate::Error::Option)?;
        Ok(self)
    }

    /// Inference precision (`Fp32`, `Fp16`, `Accuracy`, or `Default` for the device's own).
    pub fn precision(mut self, p: vinort_openvino::options::Precision) -> OpenVino {
        self.options = self.options.precision(p);
        self
    }

    /// Number of parallel streams.
    pub fn num_streams(mut self, n: std::num::NonZeroU32) -> OpenVino {
        self.options = self.options.num_streams(n);
        self
    }

    /// Number of inference threads (CPU).
    pub fn num_of_threads(mut self, n: std::num::NonZeroU32) -> OpenVino {
        self.options = self.options.num_of_threads(n);
        self
    }

    /// OpenVINO's compiled-model cache folder.
    pub fn cache_dir(mut self, dir: impl Into<std::path::PathBuf>) -> OpenVino {
        self.options = self.options.cache_dir(dir);
        self
    }

    /// Use this `libopenvino_c` (file or folder) instead of searching.
    pub fn library_path(mut self, path: impl Into<std::path::PathBuf>) -> OpenVino {
        self.library = Some(path.into());
        self
    }

    /// The options.
    pub fn options(&self) -> &vinort_openvino::options::OpenVinoOptions {
        &self.options
    }

    /// Whether the OpenVINO library can be found and loaded.
    pub fn is_available() -> bool {
        vinort_openvino::provider::is_available()
    }

    /// This provider, failing the session if it cannot start.
    pub fn error_on_failure(self) -> Provider {
        Provider::from(self).error_on_failure()
    }
}

impl From<OpenVino> for Provider {
    fn from(o: OpenVino) -> Provider {
        Provider::new(vinort_openvino::provider::OpenVinoProvider::new(o.options, o.library))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session's Cpu settings reach the provider's copy that is started (its fingerprint)
    /// and leave other providers alone.
    #[test]
    fn session_cpu_settings_reach_the_cpu_provider() {
        let settings = SessionCpuSettings { threads: Some(3), level: None, sleep_between_kernels: true };
        let p = Provider::from(Cpu::default()).with_cpu_settings(settings);
        let cpu = p.cpu.as_ref().expect("the Cpu provider keeps its settings");
        assert!(cpu.sleep_between_kernels && cpu.threads == Some(3));
        assert!(p.ep.fingerprint().contains("sleep_between_kernels=true"), "{}", p.ep.fingerprint());
        let unchanged = Provider::from(Cpu::default()).with_cpu_settings(SessionCpuSettings::default());
        assert!(unchanged.ep.fingerprint().contains("sleep_between_kernels=false"));
        let explicit = Provider::from(Cpu::default().spinning(false)).with_cpu_settings(SessionCpuSettings::default());
        assert!(explicit.ep.fingerprint().contains("sleep_between_kernels=true"));
    }
}
