//! `device_type`: which OpenVINO device (or meta device) runs the model.

use std::fmt;
use std::str::FromStr;

use super::OptionError;

/// The accepted `device_type` forms, quoted in every device error.
pub const DEVICE_FORMS: &str = "CPU, GPU, GPU.<N>, GPU.<N>.<M>, NPU, NPU.<N>, AUTO, \
     AUTO:<dev>,<dev>[,...], HETERO:<dev>,<dev>[,...], MULTI:<dev>,<dev>[,...] \
     (each <dev> one of CPU, GPU, GPU.<N>, GPU.<N>.<M>, NPU, NPU.<N>; no duplicates, no nesting)";

/// Names OpenVINO reserves for meta (virtual) devices; none of them may appear inside a device list.
const META_NAMES: [&str; 4] = ["AUTO", "HETERO", "MULTI", "BATCH"];

/// The kind of a physical device, which decides its precision defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The CPU plugin.
    Cpu,
    /// The Intel GPU plugin.
    Gpu,
    /// The Intel NPU plugin.
    Npu,
}

impl DeviceKind {
    /// The OpenVINO device type name (`CPU`, `GPU`, `NPU`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "CPU",
            DeviceKind::Gpu => "GPU",
            DeviceKind::Npu => "NPU",
        }
    }
}

/// One physical OpenVINO device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhysicalDevice {
    /// `CPU`. The CPU plugin takes no index: OpenVINO 2026.4.1 rejects `CPU.0` with
    /// "CPU plugin supports only '' as device id" (verified with the Python package).
    Cpu,
    /// `GPU` (no index, which OpenVINO resolves to `GPU.0`) or `GPU.<N>`.
    Gpu(Option<u32>),
    /// `GPU.<N>.<M>`: tile `M` of GPU `N`.
    GpuTile(u32, u32),
    /// `NPU` or `NPU.<N>`.
    Npu(Option<u32>),
}

impl PhysicalDevice {
    /// The device's kind.
    pub fn kind(&self) -> DeviceKind {
        match self {
            PhysicalDevice::Cpu => DeviceKind::Cpu,
            PhysicalDevice::Gpu(_) | PhysicalDevice::GpuTile(..) => DeviceKind::Gpu,
            PhysicalDevice::Npu(_) => DeviceKind::Npu,
        }
    }

    /// The identity used for duplicate detection: OpenVINO treats a bare `GPU`/`NPU` as index 0,
    /// so `GPU` and `GPU.0` in one list name the same device twice.
    fn identity(&self) -> (DeviceKind, u32, Option<u32>) {
        match *self {
            PhysicalDevice::Cpu => (DeviceKind::Cpu, 0, None),
            PhysicalDevice::Gpu(i) => (DeviceKind::Gpu, i.unwrap_or(0), None),
            PhysicalDevice::GpuTile(i, t) => (DeviceKind::Gpu, i, Some(t)),
            PhysicalDevice::Npu(i) => (DeviceKind::Npu, i.unwrap_or(0), None),
        }
    }

    /// Parses one physical device token (already upper-cased and trimmed); `Err` holds the reason.
    fn parse_token(token: &str) -> Result<PhysicalDevice, String> {
        if token.is_empty() {
            return Err("empty device name".to_owned());
        }
        let mut parts = token.split('.');
        // Names match case-insensitively; messages quote the token as the user wrote it.
        let base = parts.next().unwrap_or_default().to_ascii_uppercase();
        let ids: Vec<&str> = parts.collect();
        let parse_id = |id: &str| -> Result<u32, String> {
            if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
                id.parse::<u32>().map_err(|_| format!("device index `{id}` in `{token}` is out of range"))
            } else {
                Err(format!("device index `{id}` in `{token}` is not a non-negative integer"))
            }
        };
        match (base.as_str(), ids.as_slice()) {
            ("CPU", []) => Ok(PhysicalDevice::Cpu),
            ("CPU", _) => Err(format!("`{token}`: the CPU device takes no index (use `CPU`)")),
            ("GPU", []) => Ok(PhysicalDevice::Gpu(None)),
            ("GPU", [n]) => Ok(PhysicalDevice::Gpu(Some(parse_id(n)?))),
            ("GPU", [n, m]) => Ok(PhysicalDevice::GpuTile(parse_id(n)?, parse_id(m)?)),
            ("NPU", []) => Ok(PhysicalDevice::Npu(None)),
            ("NPU", [n]) => Ok(PhysicalDevice::Npu(Some(parse_id(n)?))),
            ("GPU" | "NPU", _) => Err(format!("`{token}` has too many `.` components")),
            _ => Err(format!("unknown device `{token}`")),
        }
    }
}

impl fmt::Display for PhysicalDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysicalDevice::Cpu => f.write_str("CPU"),
            PhysicalDevice::Gpu(None) => f.write_str("GPU"),
            PhysicalDevice::Gpu(Some(n)) => write!(f, "GPU.{n}"),
            PhysicalDevice::GpuTile(n, m) => write!(f, "GPU.{n}.{m}"),
            PhysicalDevice::Npu(None) => f.write_str("NPU"),
            PhysicalDevice::Npu(Some(n)) => write!(f, "NPU.{n}"),
        }
    }
}

impl FromStr for PhysicalDevice {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PhysicalDevice::parse_token(s.trim())
            .map_err(|reason| OptionError::InvalidDevice { input: s.to_owned(), reason })
    }
}

/// The `device_type` option: a physical device or a meta device over a list of physical devices.
///
/// [`Display`](fmt::Display) yields the OpenVINO device string, e.g. `HETERO:GPU.0,CPU`.
/// Values built by hand (rather than parsed) are checked by [`Device::validate`], which
/// [`OpenVinoOptions::compile_properties`](super::OpenVinoOptions::compile_properties) calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// One physical device, e.g. `CPU` or `GPU.1`.
    Single(PhysicalDevice),
    /// `AUTO` (empty list: OpenVINO picks among all available devices) or `AUTO:<list>` (two or more).
    Auto(Vec<PhysicalDevice>),
    /// `HETERO:<list>`: the model is split across the devices, earlier ones preferred (two or more).
    Hetero(Vec<PhysicalDevice>),
    /// `MULTI:<list>`: requests are spread over the devices (two or more).
    Multi(Vec<PhysicalDevice>),
}

impl Default for Device {
    /// `CPU`, as in ONNX Runtime's OpenVINO EP.
    fn default() -> Self {
        Device::CPU
    }
}

impl Device {
    /// The `CPU` device.
    pub const CPU: Device = Device::Single(PhysicalDevice::Cpu);
    /// The `GPU` device (OpenVINO's default GPU, `GPU.0`).
    pub const GPU: Device = Device::Single(PhysicalDevice::Gpu(None));
    /// The `NPU` device.
    pub const NPU: Device = Device::Single(PhysicalDevice::Npu(None));

    /// The physical devices named in the device string, in order. Empty for a bare `AUTO`,
    /// whose candidates OpenVINO chooses at compile time.
    pub fn physical_devices(&self) -> &[PhysicalDevice] {
        match self {
            Device::Single(d) => std::slice::from_ref(d),
            Device::Auto(list) | Device::Hetero(list) | Device::Multi(list) => list,
        }
    }

    /// The meta device name (`AUTO`, `HETERO`, `MULTI`), or `None` for a single physical device.
    pub fn meta_name(&self) -> Option<&'static str> {
        match self {
            Device::Single(_) => None,
            Device::Auto(_) => Some("AUTO"),
            Device::Hetero(_) => Some("HETERO"),
            Device::Multi(_) => Some("MULTI"),
        }
    }

    /// Checks the list rules: HETERO/MULTI need two or more devices, `AUTO:` with a list needs two
    /// or more, and no device appears twice (`GPU` and `GPU.0` count as the same device).
    pub fn validate(&self) -> Result<(), OptionError> {
        let invalid = |reason: String| OptionError::InvalidDevice { input: self.to_string(), reason };
        let (meta, list) = match self {
            Device::Single(_) => return Ok(()),
            Device::Auto(list) if list.is_empty() => return Ok(()),
            Device::Auto(list) => ("AUTO", list),
            Device::Hetero(list) => ("HETERO", list),
            Device::Multi(list) => ("MULTI", list),
        };
        if list.len() < 2 {
            return Err(invalid(format!(
                "{meta} needs at least two devices after `{meta}:`, got {}{}",
                list.len(),
                if meta == "AUTO" { " (use a plain device name, or `AUTO` alone to let OpenVINO choose)" } else { "" }
            )));
        }
        for (i, d) in list.iter().enumerate() {
            if let Some(prev) = list[..i].iter().find(|p| p.identity() == d.identity()) {
                return Err(invalid(format!("device `{d}` is listed twice (as `{prev}` and `{d}`)")));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Single(d) => d.fmt(f),
            Device::Auto(list) if list.is_empty() => f.write_str("AUTO"),
            Device::Auto(list) | Device::Hetero(list) | Device::Multi(list) => {
                f.write_str(self.meta_name().unwrap_or_default())?;
                for (i, d) in list.iter().enumerate() {
                    f.write_str(if i == 0 { ":" } else { "," })?;
                    d.fmt(f)?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Device {
    type Err = OptionError;

    /// Parses a `device_type` value; names are case-insensitive and spaces around list items are
    /// ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| OptionError::InvalidDevice { input: s.to_owned(), reason };
        let trimmed = s.trim();
        let Some((meta, list)) = trimmed.split_once(':') else {
            let upper = trimmed.to_ascii_uppercase();
            return match upper.as_str() {
                "AUTO" => Ok(Device::Auto(Vec::new())),
                "HETERO" | "MULTI" => Err(invalid(format!("{upper} needs a device list, e.g. `{upper}:GPU,CPU`"))),
                "BATCH" => Err(invalid("the BATCH meta device is not supported".to_owned())),
                _ => PhysicalDevice::parse_token(trimmed).map(Device::Single).map_err(invalid),
            };
        };
        let meta = meta.trim().to_ascii_uppercase();
        let meta = meta.as_str();
        let mut devices = Vec::new();
        for token in list.split(',') {
            let token = token.trim();
            let base = token.split(':').next().unwrap_or_default().trim().to_ascii_uppercase();
            let base = base.as_str();
            if META_NAMES.contains(&base) {
                return Err(invalid(format!("meta device `{base}` cannot be nested inside `{meta}:`")));
            }
            if token.is_empty() {
                return Err(invalid(format!("empty device name in the `{meta}:` list")));
            }
            devices.push(PhysicalDevice::parse_token(token).map_err(invalid)?);
        }
        let device = match meta {
            "AUTO" => Device::Auto(devices),
            "HETERO" => Device::Hetero(devices),
            "MULTI" => Device::Multi(devices),
            "BATCH" => return Err(invalid("the BATCH meta device is not supported".to_owned())),
            other => return Err(invalid(format!("`{other}:` is not a meta device (AUTO, HETERO or MULTI)"))),
        };
        device.validate().map_err(|e| match e {
            OptionError::InvalidDevice { reason, .. } => invalid(reason),
            other => other,
        })?;
        Ok(device)
    }
}

/// Parses a device name used as a scope (load_config keys, [`super::RawProperty::device`]): a
/// physical device or a bare meta device name. Returns the canonical OpenVINO spelling.
pub(crate) fn parse_scope_name(name: &str) -> Result<String, OptionError> {
    let upper = name.trim().to_ascii_uppercase();
    if META_NAMES.contains(&upper.as_str()) {
        return Ok(upper);
    }
    PhysicalDevice::parse_token(name.trim())
        .map(|d| d.to_string())
        .map_err(|reason| OptionError::InvalidDevice { input: name.to_owned(), reason })
}
