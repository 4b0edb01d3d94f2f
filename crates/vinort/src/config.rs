//! ONNX Runtime's session config entries (`ort`'s `with_config_entry` and the helpers built on
//! it, such as `with_disable_cpu_fallback`), and what the `ort`-style settings of a builder
//! amount to once it builds ([`Prepared`]).
//!
//! Every key is accepted, so a program's config lines carry over unchanged; what vinort does
//! with each is in [`KEYS`]: honoured, always so in vinort, or not used. An entry vinort does
//! not act on is never silent: it is a warning in the session's plan
//! ([`PartitionPlan::warnings`](crate::PartitionPlan::warnings)) and in the log.

use std::path::PathBuf;

use vinort_ir::Model;

use crate::EmbedMode;
use crate::dims::FixedDim;
use crate::error::{Error, Result};
use crate::profiling::Profiler;
use crate::provider::Provider;
use crate::session::SessionBuilder;

impl SessionBuilder {
    /// Sets one of ONNX Runtime's session config entries, like `ort`'s `with_config_entry`
    /// (`onnxruntime_session_options_config_keys.h`). vinort acts on:
    ///
    /// - `session.disable_cpu_ep_fallback` = `1` (`ort`'s `with_disable_cpu_fallback`): the
    ///   Cpu provider may not run anything. Registering it too is an [`Error::Config`] (ONNX
    ///   Runtime's "conflicting session configuration"), a builder without providers gets no
    ///   default `[Cpu]`, and nodes the registered providers leave are
    ///   [`Error::UnsupportedNodes`] (vinort never adds a fallback provider of its own).
    /// - `ep.context_enable` = `1`, with `ep.context_file_path` (default `<model>_ctx.onnx`
    ///   next to the model) and `ep.context_embed_mode` (`0`, the default: blobs in files next
    ///   to it; `1`: inside it): saves the built session as a compiled-context model
    ///   ([`SessionBuilder::save_context`]).
    ///
    /// Keys whose effect vinort always has (`session.disable_prepacking` = `0`,
    /// `session.disable_aot_function_inlining` = `0`, `session.x64quantprecision` = `1`) are
    /// accepted quietly with that value; any other entry is accepted and named in a plan
    /// warning saying why it changes nothing. An invalid value of a key vinort acts on fails
    /// the build.
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
    /// use vinort::{Cpu, Error, Runtime};
    /// let built = Runtime::load(model)?
    ///     .config_entry("session.disable_cpu_ep_fallback", "1")
    ///     .providers([Cpu::default().into()])
    ///     .build();
    /// assert!(matches!(built, Err(Error::Config(_))));
    ///
    /// let session = Runtime::load(model)?.config_entry("session.set_denormal_as_zero", "1").build()?;
    /// assert!(session.plan().warnings.iter().any(|w| w.contains("session.set_denormal_as_zero")));
    /// # Ok::<(), vinort::Error>(())
    /// ```
    pub fn config_entry(mut self, key: impl Into<String>, value: impl Into<String>) -> SessionBuilder {
        let key = key.into();
        self.config.retain(|(k, _)| *k != key);
        self.config.push((key, value.into()));
        self
    }

    /// Whether the partitioner weighs each region's cost on the providers that can run it
    /// ([`crate::cost`]; on by default): a region whose faster kernels do not pay for its
    /// partition's hand-off goes to the next provider. `false` keeps the rule it replaced
    /// (only regions with no heavy op move). The same as session config
    /// `session.cost_model` = `"1"`/`"on"` or `"0"`/`"off"`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
    /// let session = vinort::Runtime::load(model)?.cost_model(false).build()?;
    /// assert!(session.plan().warnings.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn cost_model(self, on: bool) -> SessionBuilder {
        self.config_entry("session.cost_model", if on { "1" } else { "0" })
    }
}

/// What vinort does with a session config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// vinort acts on it.
    Honoured,
    /// vinort always behaves as this value says; another value is a warning giving the reason.
    Always(&'static str, &'static str),
    /// Accepted and not used, for this reason.
    Unused(&'static str),
}

/// The ONNX Runtime session config keys vinort knows, and what it does with each. A key not
/// listed is accepted with a warning that vinort does not know it.
pub const KEYS: &[(&str, Handling)] = &[
    ("session.disable_cpu_ep_fallback", Handling::Honoured),
    ("session.cost_model", Handling::Honoured),
    ("ep.context_enable", Handling::Honoured),
    ("ep.context_file_path", Handling::Honoured),
    ("ep.context_embed_mode", Handling::Honoured),
    (
        "session.disable_prepacking",
        Handling::Always("0", "the Cpu provider always packs constant weights once, at compile"),
    ),
    (
        "session.disable_aot_function_inlining",
        Handling::Always("0", "vinort always inlines model-local functions when it loads a model"),
    ),
    (
        "session.x64quantprecision",
        Handling::Always("1", "the Cpu provider's int8 products are always exact (no saturating u8 x s8 path)"),
    ),
    ("session.set_denormal_as_zero", Handling::Unused("vinort does not set the CPU's flush-to-zero flags")),
    ("session.intra_op.allow_spinning", Handling::Honoured),
    ("session.inter_op.allow_spinning", Handling::Unused("vinort has no inter-op thread pool")),
    (
        "session.use_env_allocators",
        Handling::Unused("tensor buffers always come from one process-wide pool (vinort_ir::tensor::pool)"),
    ),
    (
        "session.disable_quant_qdq",
        Handling::Unused("QDQ pairs are fused by OpenVINO's own pipeline; the Cpu provider's QDQ fusion has no switch"),
    ),
    ("session.disable_double_qdq_remover", Handling::Unused("vinort has no double-QDQ remover")),
    ("session.enable_quant_qdq_cleanup", Handling::Unused("vinort has no QDQ cleanup pass")),
    ("optimization.enable_gelu_approximation", Handling::Unused("vinort computes Gelu exactly (erf)")),
    ("optimization.enable_cast_chain_elimination", Handling::Unused("vinort has no Cast chain elimination")),
    (
        "optimization.disable_specified_optimizers",
        Handling::Unused("the Cpu provider's passes are chosen by the optimization level alone"),
    ),
    ("session.use_device_allocator_for_initializers", Handling::Unused("initializers stay in the mapped model file")),
    ("session.dynamic_block_base", Handling::Unused("the Cpu provider's parallel blocks are rayon's")),
    ("ep.enable_weightless", Handling::Unused("OpenVINO partitions hold their weights")),
    ("session.max_shape_override", Handling::Unused("vinort plans no workspace from maximum shapes")),
    ("ep.context_node_name_prefix", Handling::Unused("saved context nodes are named after the model and partition")),
    ("ep.context_source_model_path", Handling::Unused("vinort's contexts hold their weights")),
];

/// The `ort`-style settings of a builder resolved for one build: config entries, dimension
/// overrides and profiling.
pub(crate) struct Prepared {
    /// Where to save a compiled context once built.
    pub save: Option<(PathBuf, EmbedMode)>,
    /// For the plan and the log.
    pub warnings: Vec<String>,
    /// The input dims dimension overrides fixed.
    pub fixed: Vec<FixedDim>,
    /// When profiling.
    pub profiler: Option<std::sync::Arc<Profiler>>,
    /// `session.cost_model`: the partitioner weighs regions' costs ([`crate::cost`]).
    pub cost_model: bool,
    /// `session.intra_op.allow_spinning=0`: the Cpu provider's workers sleep between kernels
    /// ([`vinort_cpu::CpuProvider::sleep_between_kernels`]).
    pub sleep_between_kernels: bool,
}

impl Prepared {
    /// Resolves the config entries, applies the dimension overrides to `model` and starts the
    /// profiler; fails on an invalid value of a key vinort acts on, and on providers the
    /// config forbids.
    pub fn new(
        entries: &[(String, String)],
        model: &mut Model,
        dims: &[(String, usize)],
        profiling: Option<PathBuf>,
        save: Option<(PathBuf, EmbedMode)>,
        providers: &[Provider],
    ) -> Result<Prepared> {
        let profiler = profiling.map(|prefix| std::sync::Arc::new(Profiler::new(prefix)));
        let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let flag = |key: &str| match get(key) {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(v) => Err(Error::Config(format!("session config '{key}' must be \"0\" or \"1\", not \"{v}\""))),
        };
        let cost_model = match get("session.cost_model") {
            None | Some("1" | "on") => true,
            Some("0" | "off") => false,
            Some(v) => {
                return Err(Error::Config(format!(
                    "session config 'session.cost_model' must be \"1\", \"on\", \"0\" or \"off\", not \"{v}\""
                )));
            }
        };
        // ONNX Runtime's default is "1": its pool's threads spin through a run, as ours do.
        let sleep_between_kernels = match get("session.intra_op.allow_spinning") {
            None | Some("1") => false,
            Some("0") => true,
            Some(v) => {
                return Err(Error::Config(format!(
                    "session config 'session.intra_op.allow_spinning' must be \"0\" or \"1\", not \"{v}\""
                )));
            }
        };
        let mut warnings = vec![];
        for (key, value) in entries {
            match KEYS.iter().find(|(k, _)| k == key).map(|(_, h)| *h) {
                Some(Handling::Honoured) => {}
                Some(Handling::Always(v, _)) if v == value => {}
                Some(Handling::Always(v, why)) => {
                    warnings.push(format!("session config '{key}' = '{value}' is not used: {why} (as '{v}' says)"))
                }
                Some(Handling::Unused(why)) => {
                    warnings.push(format!("session config '{key}' = '{value}' is not used: {why}"))
                }
                None => warnings.push(format!("session config '{key}' = '{value}' is not a key vinort knows; ignored")),
            }
        }

        if flag("session.disable_cpu_ep_fallback")? {
            if providers.iter().any(|p| p.cpu.is_some()) {
                return Err(Error::Config(
                    "conflicting session configuration: the Cpu provider is registered, but \
                     session.disable_cpu_ep_fallback=1 forbids running nodes on it"
                        .into(),
                ));
            }
            if providers.is_empty() {
                return Err(Error::Config(
                    "session.disable_cpu_ep_fallback=1 and no provider registered: the default [Cpu] is what it \
                     forbids (register OpenVino with .providers([...]))"
                        .into(),
                ));
            }
        }

        let context = flag("ep.context_enable")?;
        let embed = if flag("ep.context_embed_mode")? { EmbedMode::Embedded } else { EmbedMode::Files };
        let save = match (context, save) {
            (true, Some(_)) => {
                return Err(Error::Config(
                    "ep.context_enable=1 and SessionBuilder::save_context both ask to save a context; keep one".into(),
                ));
            }
            (true, None) => Some((context_path(get("ep.context_file_path"), model)?, embed)),
            (false, save) => {
                for key in ["ep.context_file_path", "ep.context_embed_mode"] {
                    if get(key).is_some() {
                        warnings.push(format!("session config '{key}' is not used without ep.context_enable=1"));
                    }
                }
                save
            }
        };

        let (fixed, dim_warnings) = crate::dims::apply(model, dims);
        warnings.extend(dim_warnings);
        Ok(Prepared { save, warnings, fixed, profiler, cost_model, sleep_between_kernels })
    }
}

/// `ep.context_file_path`, or ONNX Runtime's default: `<model stem>_ctx.onnx` next to the model.
fn context_path(given: Option<&str>, model: &Model) -> Result<PathBuf> {
    if let Some(p) = given.filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let source = model.path.as_ref().ok_or_else(|| {
        Error::Config("ep.context_enable=1 for a model loaded from bytes needs ep.context_file_path".into())
    })?;
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
    Ok(source.with_file_name(format!("{stem}_ctx.onnx")))
}
