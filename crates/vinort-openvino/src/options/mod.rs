//! Options of the OpenVINO execution provider, mirroring ONNX Runtime's OpenVINO EP (OVEP)
//! provider options, and their translation into OpenVINO property key/value strings.
//!
//! Options come in three forms that all land in [`OpenVinoOptions`]:
//! typed builder methods ([`OpenVinoOptions::device`], [`OpenVinoOptions::precision`], ...),
//! ORT's string keys ([`OpenVinoOptions::set`]), and the `onnxruntime_perf_test -i` CLI form
//! ([`OpenVinoOptions::parse_cli`]). [`OpenVinoOptions::compile_properties`] then resolves them,
//! against what each device reports it supports, into the properties handed to OpenVINO.
//!
//! # Precedence
//!
//! For one device and key, later sources win: implicit per-device defaults (e.g. CPU's FP32 hint)
//! < `load_config` < explicit typed options < raw [`OpenVinoOptions::property`] entries. So an
//! explicit `precision` overrides a `load_config` `INFERENCE_PRECISION_HINT` (with a warning),
//! while a `load_config` hint overrides the implicit CPU default.
//!
//! # Verified facts (OpenVINO 2026.4.1 Python package, CPU "AMD EPYC" with AVX-512 bf16)
//!
//! * The CPU plugin's default `INFERENCE_PRECISION_HINT` is `bf16` and the default
//!   `DYNAMIC_QUANTIZATION_GROUP_SIZE` is `32`; a MatMul's error vs. f32 was 7.5e-2 by default and
//!   5.3e-5 with `INFERENCE_PRECISION_HINT=f32` or `EXECUTION_MODE_HINT=ACCURACY`.
//! * `EXECUTION_MODE_HINT=ACCURACY` alone leaves the precision hint `dynamic` (undefined) and sets
//!   `DYNAMIC_QUANTIZATION_GROUP_SIZE=0`.
//! * `INFERENCE_PRECISION_HINT=f16` is accepted by the CPU plugin, but on this CPU (no native f16)
//!   the compiled model reports `bf16`.
//! * `MODEL_PRIORITY` is rejected by the CPU plugin ("Unsupported property MODEL_PRIORITY by CPU
//!   plugin"); AUTO and MULTI list it as RW. HETERO's own SUPPORTED_PROPERTIES are only
//!   `MULTI_DEVICE_PRIORITIES` and `MODEL_DISTRIBUTION_POLICY` (RW).
//! * `CACHE_DIR` is not in the CPU plugin's SUPPORTED_PROPERTIES but `compile_model` accepts it
//!   (the core consumes it), so it is treated as core-level.
//! * `DEVICE_PROPERTIES` must be written without quotes, `{CPU:{INFERENCE_PRECISION_HINT:f32}}`:
//!   that form reached the CPU under HETERO, AUTO and MULTI (numerically verified, and an invalid
//!   value inside it was reported by the CPU plugin). The JSON-quoted form
//!   `{"CPU":{"INFERENCE_PRECISION_HINT":"xx"}}` was silently ignored, and an empty device entry
//!   `{CPU:{}}` made `compile_model` hang, so neither is ever produced.

mod config;
mod device;
mod resolve;
mod shape;
#[cfg(test)]
mod tests;

use std::fmt;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::str::FromStr;

pub use config::{LoadConfig, validate_property_value};
pub use device::{DEVICE_FORMS, Device, DeviceKind, PhysicalDevice};
pub use resolve::{DeviceProperties, Resolved};
pub use shape::{Dim, InputShape, Layout, LayoutSpec, ReshapeInput};

/// The option keys [`OpenVinoOptions::set`] accepts (ONNX Runtime OVEP names).
pub const KNOWN_KEYS: &[&str] = &[
    "device_type",
    "precision",
    "num_of_threads",
    "num_streams",
    "cache_dir",
    "load_config",
    "model_priority",
    "enable_qdq_optimizer",
    "disable_dynamic_shapes",
    "reshape_input",
    "layout",
    "context",
    "enable_opencl_throttling",
    "device_luid",
    "enable_causallm",
];

/// An invalid option: each message names the option, the offending value and what is valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// [`OpenVinoOptions::set`] got a key that is not an OVEP option.
    #[error("unknown OpenVINO provider option `{key}`; known options: {}", KNOWN_KEYS.join(", "))]
    UnknownOption {
        /// The key given.
        key: String,
    },
    /// A scalar option value outside its domain.
    #[error("invalid value `{value}` for option `{option}`: expected {expected}")]
    InvalidValue {
        /// The option name.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A `device_type` (or a device name in `load_config` / a raw property) that is not valid.
    #[error("invalid device_type `{input}`: {reason}; valid forms: {DEVICE_FORMS}")]
    InvalidDevice {
        /// The device string given.
        input: String,
        /// Which token is wrong and why.
        reason: String,
    },
    /// An option that is valid but that vinort cannot honour (it says why rather than ignore it).
    #[error("option `{option}` cannot be honoured: {reason}")]
    Unsupported {
        /// The option name.
        option: &'static str,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A syntax error in `reshape_input` or `layout`.
    #[error("invalid {option} `{input}` at byte {position}: {reason}")]
    Syntax {
        /// `reshape_input` or `layout`.
        option: &'static str,
        /// The whole value.
        input: String,
        /// Byte offset of the problem in `input`.
        position: usize,
        /// What is wrong there.
        reason: String,
    },
    /// The `load_config` value was not JSON and could not be read as a file.
    #[error("invalid load_config: cannot read file `{path}`: {reason}")]
    LoadConfigIo {
        /// The path tried.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The `load_config` JSON is malformed or not shaped `{"DEVICE": {"KEY": value}}`.
    #[error("invalid load_config: {reason}")]
    LoadConfig {
        /// What is wrong.
        reason: String,
    },
    /// A property value (from `load_config`) outside the domain OpenVINO accepts for its key.
    #[error("invalid value `{value}` for OpenVINO property `{key}` of device `{device}`: expected {expected}")]
    InvalidPropertyValue {
        /// The device the property is scoped to.
        device: String,
        /// The property key.
        key: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A precision the chosen device cannot run.
    #[error("precision {precision} is not supported on device `{device}`: {reason}")]
    UnsupportedPrecision {
        /// The physical device.
        device: String,
        /// The requested precision.
        precision: Precision,
        /// Why, and what to use instead.
        reason: String,
    },
    /// A per-device property that the unquoted `DEVICE_PROPERTIES` syntax cannot carry.
    #[error(
        "property `{key}`=`{value}` for device `{device}` cannot be passed to a meta device: \
         OpenVINO's DEVICE_PROPERTIES syntax does not allow `{{`, `}}`, `,` or `:` in keys or values"
    )]
    UnrepresentableDeviceProperty {
        /// The physical device.
        device: String,
        /// The property key.
        key: String,
        /// The property value.
        value: String,
    },
    /// A malformed token in the `key|value` CLI form.
    #[error("invalid provider option token `{token}`: {reason}")]
    Cli {
        /// The token.
        token: String,
        /// What is wrong.
        reason: String,
    },
}

/// The `precision` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Run in f32. On CPU: `INFERENCE_PRECISION_HINT=f32` and `DYNAMIC_QUANTIZATION_GROUP_SIZE=0`
    /// (the CPU plugin otherwise picks bf16 where the CPU has it, and dynamically quantises
    /// activations of int8-weight models). On GPU: `INFERENCE_PRECISION_HINT=f32`. Not on NPU.
    Fp32,
    /// Run in f16: `INFERENCE_PRECISION_HINT=f16` on CPU and GPU; nothing on NPU (its native mode).
    Fp16,
    /// Let the plugin keep full accuracy: `EXECUTION_MODE_HINT=ACCURACY`, no precision hint.
    /// Not on NPU.
    Accuracy,
    /// Set no precision property at all, so OpenVINO's own device default applies (bf16 on CPUs
    /// with bf16 support). Useful for benchmarking OpenVINO as it ships.
    Default,
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Fp32 => "FP32",
            Precision::Fp16 => "FP16",
            Precision::Accuracy => "ACCURACY",
            Precision::Default => "DEFAULT",
        })
    }
}

impl FromStr for Precision {
    type Err = OptionError;

    /// `FP32`, `FP16`, `ACCURACY` or `DEFAULT`, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "FP32" => Ok(Precision::Fp32),
            "FP16" => Ok(Precision::Fp16),
            "ACCURACY" => Ok(Precision::Accuracy),
            "DEFAULT" => Ok(Precision::Default),
            _ => Err(OptionError::InvalidValue {
                option: "precision",
                value: s.to_owned(),
                expected: "FP32, FP16, ACCURACY or DEFAULT (case-insensitive)".to_owned(),
            }),
        }
    }
}

/// The `model_priority` option, mapped to `MODEL_PRIORITY`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelPriority {
    /// `LOW`.
    Low,
    /// `MEDIUM`.
    Medium,
    /// `HIGH`.
    High,
    /// Leave `MODEL_PRIORITY` unset.
    #[default]
    Default,
}

impl ModelPriority {
    /// The `MODEL_PRIORITY` value, or `None` for [`ModelPriority::Default`].
    pub fn property_value(self) -> Option<&'static str> {
        match self {
            ModelPriority::Low => Some("LOW"),
            ModelPriority::Medium => Some("MEDIUM"),
            ModelPriority::High => Some("HIGH"),
            ModelPriority::Default => None,
        }
    }
}

impl FromStr for ModelPriority {
    type Err = OptionError;

    /// `LOW`, `MEDIUM`, `HIGH` or `DEFAULT`, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "LOW" => Ok(ModelPriority::Low),
            "MEDIUM" => Ok(ModelPriority::Medium),
            "HIGH" => Ok(ModelPriority::High),
            "DEFAULT" => Ok(ModelPriority::Default),
            _ => Err(OptionError::InvalidValue {
                option: "model_priority",
                value: s.to_owned(),
                expected: "LOW, MEDIUM, HIGH or DEFAULT".to_owned(),
            }),
        }
    }
}

/// A property passed through [`OpenVinoOptions::property`] without domain or support checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawProperty {
    /// The device it is scoped to; `None` means the compile target itself.
    pub device: Option<String>,
    /// The OpenVINO property key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// All options of the OpenVINO execution provider.
///
/// Fields hold only valid values except [`OpenVinoOptions::device`] built by hand, which
/// [`OpenVinoOptions::compile_properties`] re-validates.
#[derive(Clone, Debug, Default)]
pub struct OpenVinoOptions {
    /// `device_type` (default `CPU`).
    pub device: Device,
    /// `precision`; `None` means the per-device default: FP32 on CPU (as ORT's OVEP does for CPU),
    /// FP16 on GPU, the native FP16 on NPU.
    pub precision: Option<Precision>,
    /// `num_of_threads` -> `INFERENCE_NUM_THREADS` (CPU only).
    pub num_of_threads: Option<NonZeroU32>,
    /// `num_streams` -> `NUM_STREAMS`.
    pub num_streams: Option<NonZeroU32>,
    /// `cache_dir` -> core-level `CACHE_DIR`.
    pub cache_dir: Option<PathBuf>,
    /// `model_priority` -> `MODEL_PRIORITY` where the target supports it.
    pub model_priority: ModelPriority,
    /// `enable_qdq_optimizer`: let the provider optimise QDQ models for OpenVINO (a graph
    /// transformation; no OpenVINO property).
    pub enable_qdq_optimizer: bool,
    /// `disable_dynamic_shapes`: compile with concrete input shapes at run time instead of dynamic
    /// ones (applied by the provider; no OpenVINO property).
    pub disable_dynamic_shapes: bool,
    /// `reshape_input`: shapes applied to the model before compilation.
    pub reshape_input: Option<ReshapeInput>,
    /// `layout`: tensor layouts set on the model before compilation.
    pub layout: Option<LayoutSpec>,
    /// `load_config`: device-scoped raw OpenVINO properties.
    pub load_config: Option<LoadConfig>,
    /// Raw properties from [`OpenVinoOptions::property`], applied last.
    pub raw_properties: Vec<RawProperty>,
    /// `context`: the address of an OpenCL context for GPU remote tensors. Parsed (hex with
    /// `0x` or decimal, non-zero) and refused when compiling: OpenVINO's C API has no remote
    /// context to wrap it in.
    pub context: Option<u64>,
    /// `enable_opencl_throttling` -> `GPU_QUEUE_THROTTLE=LOW` on GPU devices (ignored with a
    /// warning when the target has no GPU).
    pub enable_opencl_throttling: bool,
    /// `device_luid`: the adapter LUID (up to 16 hex digits, stored as 16 upper-case digits) of
    /// the device to run on. Refused when compiling: name the device in `device_type` instead.
    pub device_luid: Option<String>,
    /// `enable_causallm`: ONNX Runtime's stateful LLM transformation. `true` is refused when
    /// compiling: OpenVINO's C API cannot apply the stateful (MakeStateful) transformation.
    pub enable_causallm: bool,
}

impl OpenVinoOptions {
    /// Sets `device_type`.
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Sets `precision`.
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = Some(precision);
        self
    }

    /// Sets `num_of_threads` (CPU inference threads).
    pub fn num_of_threads(mut self, threads: NonZeroU32) -> Self {
        self.num_of_threads = Some(threads);
        self
    }

    /// Sets `num_streams`.
    pub fn num_streams(mut self, streams: NonZeroU32) -> Self {
        self.num_streams = Some(streams);
        self
    }

    /// Sets `cache_dir` (OpenVINO's compiled-model cache).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Sets `model_priority`.
    pub fn model_priority(mut self, priority: ModelPriority) -> Self {
        self.model_priority = priority;
        self
    }

    /// Sets `enable_qdq_optimizer`.
    pub fn enable_qdq_optimizer(mut self, enable: bool) -> Self {
        self.enable_qdq_optimizer = enable;
        self
    }

    /// Sets `disable_dynamic_shapes`.
    pub fn disable_dynamic_shapes(mut self, disable: bool) -> Self {
        self.disable_dynamic_shapes = disable;
        self
    }

    /// Sets `reshape_input`.
    pub fn reshape_input(mut self, reshape: ReshapeInput) -> Self {
        self.reshape_input = Some(reshape);
        self
    }

    /// Sets `layout`.
    pub fn layout(mut self, layout: LayoutSpec) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Sets `load_config`, replacing any earlier one.
    pub fn load_config(mut self, config: LoadConfig) -> Self {
        self.load_config = Some(config);
        self
    }

    /// Adds a raw OpenVINO property, passed as is (no support or value checks) and winning over
    /// every other source. `device` scopes it: `None` or the target's own name puts it on the
    /// compile target; a physical device of a meta target puts it in that device's
    /// `DEVICE_PROPERTIES`; other devices are ignored with a warning.
    pub fn property(mut self, device: Option<&str>, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.raw_properties.push(RawProperty {
            device: device.map(str::to_owned),
            key: key.into(),
            value: value.into(),
        });
        self
    }

    /// Sets one option from its ONNX Runtime OVEP key and string value.
    ///
    /// Booleans accept `true`/`false`/`1`/`0` (case-insensitive). An empty `cache_dir` clears it.
    /// `load_config` is inline JSON or a file path.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let v = value.trim();
        match key.trim() {
            "device_type" => self.device = v.parse()?,
            "precision" => self.precision = Some(v.parse()?),
            "num_of_threads" => self.num_of_threads = Some(parse_positive("num_of_threads", v)?),
            "num_streams" => self.num_streams = Some(parse_positive("num_streams", v)?),
            "cache_dir" => self.cache_dir = (!v.is_empty()).then(|| PathBuf::from(v)),
            "load_config" => self.load_config = Some(LoadConfig::parse(v)?),
            "model_priority" => self.model_priority = v.parse()?,
            "enable_qdq_optimizer" => self.enable_qdq_optimizer = parse_bool("enable_qdq_optimizer", v)?,
            "disable_dynamic_shapes" => self.disable_dynamic_shapes = parse_bool("disable_dynamic_shapes", v)?,
            "reshape_input" => self.reshape_input = Some(v.parse()?),
            "layout" => self.layout = Some(v.parse()?),
            "context" => self.context = Some(parse_address(v)?),
            "enable_opencl_throttling" => {
                self.enable_opencl_throttling = parse_bool("enable_opencl_throttling", v)?;
            }
            "device_luid" => self.device_luid = Some(parse_luid(v)?),
            "enable_causallm" => self.enable_causallm = parse_bool("enable_causallm", v)?,
            _ => return Err(OptionError::UnknownOption { key: key.to_owned() }),
        }
        Ok(())
    }

    /// Parses the `onnxruntime_perf_test -i` form: whitespace-separated `key|value` pairs, e.g.
    /// `"device_type|CPU precision|FP32 num_streams|2"`. Values cannot contain spaces here.
    pub fn parse_cli(s: &str) -> Result<OpenVinoOptions, OptionError> {
        let mut options = OpenVinoOptions::default();
        for token in s.split_whitespace() {
            let Some((key, value)) = token.split_once('|') else {
                return Err(OptionError::Cli { token: token.to_owned(), reason: "expected `key|value`".to_owned() });
            };
            if key.is_empty() {
                return Err(OptionError::Cli { token: token.to_owned(), reason: "empty key before `|`".to_owned() });
            }
            options.set(key, value)?;
        }
        Ok(options)
    }
}

fn parse_positive(option: &'static str, v: &str) -> Result<NonZeroU32, OptionError> {
    v.parse::<NonZeroU32>().map_err(|_| OptionError::InvalidValue {
        option,
        value: v.to_owned(),
        expected: format!("an integer from 1 to {}", u32::MAX),
    })
}

/// A non-zero address, `0x`-prefixed hex or decimal (ONNX Runtime passes `context` so).
fn parse_address(v: &str) -> Result<u64, OptionError> {
    let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse::<u64>().ok(),
    };
    parsed.filter(|a| *a != 0).ok_or_else(|| OptionError::InvalidValue {
        option: "context",
        value: v.to_owned(),
        expected: "a non-zero address, 0x-prefixed hex or decimal".to_owned(),
    })
}

/// An adapter LUID: 1 to 16 hex digits (an optional `0x`), as 16 upper-case digits.
fn parse_luid(v: &str) -> Result<String, OptionError> {
    let digits = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")).unwrap_or(v);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(OptionError::InvalidValue {
            option: "device_luid",
            value: v.to_owned(),
            expected: "an adapter LUID of 1 to 16 hex digits".to_owned(),
        });
    }
    Ok(format!("{:0>16}", digits.to_ascii_uppercase()))
}

fn parse_bool(option: &'static str, v: &str) -> Result<bool, OptionError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(OptionError::InvalidValue { option, value: v.to_owned(), expected: "true, false, 1 or 0".to_owned() }),
    }
}
