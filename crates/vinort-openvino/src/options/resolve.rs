//! Resolution of [`OpenVinoOptions`] into the property lists handed to OpenVINO.

use super::device::parse_scope_name;
use super::{DeviceKind, OpenVinoOptions, OptionError, PhysicalDevice, Precision};

/// What a device says about its properties; the FFI layer answers from OpenVINO's
/// `SUPPORTED_PROPERTIES` (RO/RW flags), tests from a fake.
///
/// `device` is a physical device string as written in the device_type (`CPU`, `GPU.0`) or a meta
/// device name (`AUTO`, `HETERO`, `MULTI`) for properties set on a meta target itself.
pub trait DeviceProperties {
    /// Whether `device` lists `key` among its supported properties.
    fn supported(&self, device: &str, key: &str) -> bool;
    /// Whether `key` is writable on `device` (RW or WO), as opposed to read-only.
    fn mutable(&self, device: &str, key: &str) -> bool;
    /// The physical devices present (OpenVINO's `AVAILABLE_DEVICES` of the core). Only used to
    /// scope per-device properties under a bare `AUTO`; the default (none) skips them with a warning.
    fn available_devices(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The properties to compile with, as resolved by [`OpenVinoOptions::compile_properties`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The device string to pass to `compile_model`, e.g. `HETERO:GPU.0,CPU`.
    pub device: String,
    /// The `(key, value)` properties for `compile_model`, in order and without duplicate keys. For a
    /// meta target this ends with a `DEVICE_PROPERTIES` entry encoding
    /// [`Resolved::device_properties`].
    pub properties: Vec<(String, String)>,
    /// Core-level properties (`CACHE_DIR`) to set on the OpenVINO core (or pass to `compile_model`,
    /// which accepts them too).
    pub core_properties: Vec<(String, String)>,
    /// For meta targets: the properties of each physical device, in device order; devices without
    /// properties are left out. Empty for a single-device target.
    pub device_properties: Vec<(String, Vec<(String, String)>)>,
    /// Options or `load_config` entries that were ignored or overridden, one sentence each.
    pub warnings: Vec<String>,
}

impl Resolved {
    /// The value of a compile property, if set.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of a property scoped to one physical device of a meta target, if set.
    pub fn device_property(&self, device: &str, key: &str) -> Option<&str> {
        let (_, props) = self.device_properties.iter().find(|(d, _)| d == device)?;
        props.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Where a value came from; a later source wins for the same device and key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// A per-device default the user did not ask for (CPU's FP32 hint).
    Implicit,
    LoadConfig,
    /// A typed option.
    Explicit,
    /// [`OpenVinoOptions::property`]: never checked against the device.
    Raw,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Target,
    Device(usize),
    Core,
}

/// One resolved property; `origin` names the option that set it, for warnings.
struct Entry {
    key: String,
    value: String,
    source: Source,
    origin: String,
}

type Entries = Vec<Entry>;

struct Builder<'a> {
    dev: &'a dyn DeviceProperties,
    /// Name used to query support for [`Slot::Target`]: the physical device or the meta name.
    target_query: String,
    target: Entries,
    core: Entries,
    /// Physical devices, each with its slot: [`Slot::Target`] for a single-device target.
    physical: Vec<(PhysicalDevice, Slot)>,
    per_device: Vec<(String, Entries)>,
    warnings: Vec<String>,
}

impl Builder<'_> {
    fn warn(&mut self, message: String) {
        tracing::warn!(target: "vinort_openvino::options", "{message}");
        self.warnings.push(message);
    }

    /// Puts `key=value` on every physical device of one kind (`(kind, "the CPU", "CPU")`) of
    /// the target named `target`, warning that `origin` is ignored when it has none.
    fn put_on_kind(
        &mut self,
        (physical, target): (&[(PhysicalDevice, Slot)], &str),
        (kind, applies_to, name): (DeviceKind, &str, &str),
        key: &str,
        value: &str,
        origin: &str,
    ) {
        let slots: Vec<Slot> = physical.iter().filter(|(p, _)| p.kind() == kind).map(|(_, s)| *s).collect();
        if slots.is_empty() {
            self.warn(format!("{origin} applies only to {applies_to}; device_type {target} has no {name}; ignored"));
        }
        for slot in slots {
            self.put(slot, key, value, Source::Explicit, origin);
        }
    }

    fn scope_name(&self, slot: Slot) -> String {
        match slot {
            Slot::Target => self.target_query.clone(),
            Slot::Device(i) => self.per_device.get(i).map(|(d, _)| d.clone()).unwrap_or_default(),
            Slot::Core => "core".to_owned(),
        }
    }

    fn put(&mut self, slot: Slot, key: &str, value: &str, source: Source, origin: &str) {
        let scope = self.scope_name(slot);
        if slot != Slot::Core && source != Source::Raw {
            let problem = if !self.dev.supported(&scope, key) {
                Some("is not supported by")
            } else if !self.dev.mutable(&scope, key) {
                Some("is read-only on")
            } else {
                None
            };
            if let Some(problem) = problem {
                if source == Source::Implicit {
                    tracing::debug!(target: "vinort_openvino::options", "default {key}={value} skipped: {problem} {scope}");
                } else {
                    self.warn(format!("{origin}: property {key}={value} {problem} device {scope}; ignored"));
                }
                return;
            }
        }
        let mut overridden = None;
        let entries = match slot {
            Slot::Target => &mut self.target,
            Slot::Core => &mut self.core,
            Slot::Device(i) => match self.per_device.get_mut(i) {
                Some((_, e)) => e,
                None => return,
            },
        };
        match entries.iter_mut().find(|e| e.key == key) {
            Some(entry) => {
                let incoming_wins = source >= entry.source;
                let (loser, winner) = if incoming_wins { (entry.source, source) } else { (source, entry.source) };
                if loser == Source::LoadConfig && winner >= Source::Explicit && entry.value != value {
                    overridden = Some(if incoming_wins {
                        format!("{origin}: {key}={value} overrides load_config {key}={}", entry.value)
                    } else {
                        format!("{}: {key}={} overrides load_config {key}={value}", entry.origin, entry.value)
                    });
                }
                if incoming_wins {
                    entry.value = value.to_owned();
                    entry.source = source;
                    entry.origin = origin.to_owned();
                }
            }
            None => {
                entries.push(Entry { key: key.to_owned(), value: value.to_owned(), source, origin: origin.to_owned() })
            }
        }
        if let Some(message) = overridden {
            self.warn(format!("{message} for device {scope}"));
        }
    }

    /// Slots of the physical devices matching a scope name: exact device (with `GPU` == `GPU.0`),
    /// or every device of a type when the name is a bare type (`GPU` also covers `GPU.1`).
    fn matching_slots(&self, name: &str) -> Vec<Slot> {
        let Ok(wanted) = name.parse::<PhysicalDevice>() else { return Vec::new() };
        let type_level = !name.contains('.');
        self.physical
            .iter()
            .filter(|(p, _)| p.to_string() == name || (type_level && p.kind() == wanted.kind()) || *p == wanted)
            .map(|(_, s)| *s)
            .collect()
    }
}

/// The precision properties of one device kind, or why the precision is impossible there.
fn precision_properties(
    kind: DeviceKind,
    precision: Option<Precision>,
) -> Result<Vec<(&'static str, &'static str, Source)>, String> {
    use Source::{Explicit, Implicit};
    const HINT: &str = "INFERENCE_PRECISION_HINT";
    const DQ: &str = "DYNAMIC_QUANTIZATION_GROUP_SIZE";
    const MODE: &str = "EXECUTION_MODE_HINT";
    Ok(match (kind, precision) {
        (_, Some(Precision::Default)) => vec![],
        (DeviceKind::Npu, None | Some(Precision::Fp16)) => vec![],
        (DeviceKind::Npu, Some(_)) => return Err("the NPU runs models in FP16 only; use FP16 or DEFAULT".to_owned()),
        // Dynamic quantisation is a default of the f32 choice, not something the user named, so a
        // load_config DYNAMIC_QUANTIZATION_GROUP_SIZE may still override it.
        (DeviceKind::Cpu, None) => vec![(HINT, "f32", Implicit), (DQ, "0", Implicit)],
        (DeviceKind::Cpu, Some(Precision::Fp32)) => vec![(HINT, "f32", Explicit), (DQ, "0", Implicit)],
        (DeviceKind::Gpu, None) => vec![(HINT, "f16", Implicit)],
        (DeviceKind::Gpu, Some(Precision::Fp32)) => vec![(HINT, "f32", Explicit)],
        (_, Some(Precision::Fp16)) => vec![(HINT, "f16", Explicit)],
        (_, Some(Precision::Accuracy)) => vec![(MODE, "ACCURACY", Explicit)],
    })
}

/// Characters the unquoted `DEVICE_PROPERTIES` syntax uses as delimiters.
const DEVICE_PROPERTIES_DELIMITERS: [char; 4] = ['{', '}', ',', ':'];

impl OpenVinoOptions {
    /// The ONNX Runtime keys vinort parses and validates but cannot honour, refused with the
    /// reason rather than ignored.
    fn refuse_what_cannot_be_honoured(&self) -> Result<(), OptionError> {
        if self.context.is_some() {
            return Err(OptionError::Unsupported {
                option: "context",
                reason: "an OpenCL context for GPU remote tensors needs OpenVINO's remote-context API, \
                         which its C API does not offer"
                    .to_owned(),
            });
        }
        if let Some(luid) = &self.device_luid {
            return Err(OptionError::Unsupported {
                option: "device_luid",
                reason: format!(
                    "selecting a device by adapter LUID {luid} is not supported; name the device in \
                     device_type instead (`vinort devices` lists them, e.g. GPU.1)"
                ),
            });
        }
        if self.enable_causallm {
            return Err(OptionError::Unsupported {
                option: "enable_causallm",
                reason: "the stateful LLM transformation (OpenVINO's MakeStateful pass) is not reachable \
                         through OpenVINO's C API"
                    .to_owned(),
            });
        }
        Ok(())
    }

    /// Resolves the options into OpenVINO properties, asking `dev` what each device supports.
    ///
    /// * Single device: precision hints, `NUM_STREAMS`, `INFERENCE_NUM_THREADS` (CPU only),
    ///   `MODEL_PRIORITY` and the device's `load_config` entries go to [`Resolved::properties`].
    /// * Meta device (AUTO/HETERO/MULTI): `MODEL_PRIORITY` and `load_config` entries for the meta
    ///   name go to [`Resolved::properties`]; precision hints (each device's own default when
    ///   `precision` is unset), `NUM_STREAMS`, `INFERENCE_NUM_THREADS` (to the CPU) and
    ///   `load_config` entries of physical devices go to [`Resolved::device_properties`], encoded as
    ///   one `DEVICE_PROPERTIES` property. A `load_config` device key that is a bare type (`GPU`)
    ///   applies to every device of that type; an exact key (`GPU.1`) wins over it.
    /// * `cache_dir` and `load_config` `CACHE_DIR` go to [`Resolved::core_properties`].
    ///
    /// Keys a device does not support, or exposes read-only, are skipped with a warning (defaults
    /// the user did not ask for are skipped silently); `load_config` entries for devices that are
    /// not part of the target are ignored with a warning. Raw properties skip these checks.
    pub fn compile_properties(&self, dev: &dyn DeviceProperties) -> Result<Resolved, OptionError> {
        self.device.validate()?;
        self.refuse_what_cannot_be_honoured()?;
        let target_name = self.device.to_string();
        let meta = self.device.meta_name();
        let mut b = Builder {
            dev,
            target_query: meta.map_or_else(|| target_name.clone(), str::to_owned),
            target: Vec::new(),
            core: Vec::new(),
            physical: Vec::new(),
            per_device: Vec::new(),
            warnings: Vec::new(),
        };

        // A bare AUTO names no devices, so per-device properties go to whatever is available.
        let bare_auto = meta.is_some() && self.device.physical_devices().is_empty();
        let physical: Vec<PhysicalDevice> = if bare_auto {
            dev.available_devices().iter().filter_map(|d| d.parse().ok()).collect()
        } else {
            self.device.physical_devices().to_vec()
        };
        for p in physical {
            let slot = if meta.is_some() {
                b.per_device.push((p.to_string(), Vec::new()));
                Slot::Device(b.per_device.len() - 1)
            } else {
                Slot::Target
            };
            b.physical.push((p, slot));
        }
        let physical = b.physical.clone();
        if bare_auto
            && physical.is_empty()
            && (self.precision.is_some() || self.num_streams.is_some() || self.num_of_threads.is_some())
        {
            b.warn(
                "device_type AUTO names no devices and none are known to be available; precision, \
                 num_streams and num_of_threads are not applied"
                    .to_owned(),
            );
        }

        for (p, slot) in &physical {
            match precision_properties(p.kind(), self.precision) {
                Ok(props) => {
                    for (key, value, source) in props {
                        b.put(*slot, key, value, source, "precision");
                    }
                }
                // AUTO picked the candidates itself, so an unfit one is skipped rather than fatal.
                Err(reason) if bare_auto => {
                    b.warn(format!("precision: not applied to AUTO candidate {p}: {reason}"));
                }
                Err(reason) => {
                    return Err(OptionError::UnsupportedPrecision {
                        device: p.to_string(),
                        precision: self.precision.unwrap_or(Precision::Default),
                        reason,
                    });
                }
            }
        }

        if let Some(config) = &self.load_config {
            // Type-level keys first, so an exact device key (`GPU.1`) applied later overrides them.
            let mut devices: Vec<&(String, Vec<(String, String)>)> = config.devices.iter().collect();
            devices.sort_by_key(|(d, _)| d.contains('.'));
            for (device, props) in devices {
                let slots = if meta == Some(device.as_str()) { vec![Slot::Target] } else { b.matching_slots(device) };
                if slots.is_empty() {
                    b.warn(format!(
                        "load_config: device {device} is not part of device_type {target_name}; its properties are ignored"
                    ));
                    continue;
                }
                for slot in slots {
                    for (key, value) in props {
                        let slot = if key == "CACHE_DIR" { Slot::Core } else { slot };
                        b.put(slot, key, value, Source::LoadConfig, "load_config");
                    }
                }
            }
        }

        if let Some(streams) = self.num_streams {
            for (_, slot) in &physical {
                b.put(*slot, "NUM_STREAMS", &streams.to_string(), Source::Explicit, "num_streams");
            }
        }
        if let Some(threads) = self.num_of_threads {
            let cpu = (DeviceKind::Cpu, "the CPU", "CPU");
            b.put_on_kind(
                (&physical, &target_name),
                cpu,
                "INFERENCE_NUM_THREADS",
                &threads.to_string(),
                "num_of_threads",
            );
        }
        if let Some(priority) = self.model_priority.property_value() {
            b.put(Slot::Target, "MODEL_PRIORITY", priority, Source::Explicit, "model_priority");
        }
        if self.enable_opencl_throttling {
            // ONNX Runtime's OpenVINO EP sets the GPU queue throttle to LOW for this option.
            let gpu = (DeviceKind::Gpu, "GPUs", "GPU");
            b.put_on_kind((&physical, &target_name), gpu, "GPU_QUEUE_THROTTLE", "LOW", "enable_opencl_throttling");
        }
        if let Some(dir) = &self.cache_dir {
            let Some(text) = dir.to_str().filter(|t| !t.is_empty()) else {
                return Err(OptionError::InvalidValue {
                    option: "cache_dir",
                    value: dir.display().to_string(),
                    expected: "a non-empty UTF-8 directory path".to_owned(),
                });
            };
            b.put(Slot::Core, "CACHE_DIR", text, Source::Explicit, "cache_dir");
        }

        for raw in &self.raw_properties {
            let slots = match &raw.device {
                None => vec![Slot::Target],
                Some(d) => {
                    let name = parse_scope_name(d)?;
                    if name == b.target_query { vec![Slot::Target] } else { b.matching_slots(&name) }
                }
            };
            if slots.is_empty() {
                let scope = raw.device.as_deref().unwrap_or_default();
                b.warn(format!(
                    "property: device {scope} is not part of device_type {target_name}; {}={} ignored",
                    raw.key, raw.value
                ));
            }
            for slot in slots {
                b.put(slot, &raw.key, &raw.value, Source::Raw, "property");
            }
        }

        finish(b, target_name)
    }
}

fn finish(mut b: Builder<'_>, device: String) -> Result<Resolved, OptionError> {
    let strip = |entries: Entries| -> Vec<(String, String)> { entries.into_iter().map(|e| (e.key, e.value)).collect() };
    let device_properties: Vec<(String, Vec<(String, String)>)> = std::mem::take(&mut b.per_device)
        .into_iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(d, entries)| (d, strip(entries)))
        .collect();
    let mut properties = strip(std::mem::take(&mut b.target));
    if !device_properties.is_empty() {
        let mut encoded = String::from("{");
        for (i, (d, props)) in device_properties.iter().enumerate() {
            if i > 0 {
                encoded.push(',');
            }
            encoded.push_str(d);
            encoded.push_str(":{");
            for (j, (k, v)) in props.iter().enumerate() {
                if k.contains(DEVICE_PROPERTIES_DELIMITERS) || v.contains(DEVICE_PROPERTIES_DELIMITERS) {
                    return Err(OptionError::UnrepresentableDeviceProperty {
                        device: d.clone(),
                        key: k.clone(),
                        value: v.clone(),
                    });
                }
                if j > 0 {
                    encoded.push(',');
                }
                encoded.push_str(k);
                encoded.push(':');
                encoded.push_str(v);
            }
            encoded.push('}');
        }
        encoded.push('}');
        if properties.iter().any(|(k, _)| k == "DEVICE_PROPERTIES") {
            b.warn(format!(
                "property: a raw DEVICE_PROPERTIES replaces the per-device properties {encoded} resolved from the options"
            ));
        } else {
            properties.push(("DEVICE_PROPERTIES".to_owned(), encoded));
        }
    }
    Ok(Resolved { device, properties, core_properties: strip(b.core), device_properties, warnings: b.warnings })
}
