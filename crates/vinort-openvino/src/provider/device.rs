//! Devices at start-up: is the requested device there, and which properties it takes.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use crate::error::{OvError, OvResult};
use crate::ffi::{self, Core};
use crate::options::{DeviceProperties, OpenVinoOptions};

/// Checks that every physical device the options name is there.
///
/// A device that answers a property query is there. Listing every device instead costs tens of
/// milliseconds (OpenVINO loads and probes every plugin), so the full list is only asked for
/// when a device does not answer, to say what OpenVINO does see.
pub(super) fn check_available(core: &Core, options: &OpenVinoOptions, version: &str) -> OvResult<()> {
    for d in options.device.physical_devices() {
        let name = d.to_string();
        if core.property(&name, "FULL_DEVICE_NAME").is_ok() {
            continue;
        }
        let available = core.available_devices()?;
        let kind = name.split('.').next().unwrap_or(&name).to_owned();
        if !available.iter().any(|a| *a == name || a.split('.').next() == Some(kind.as_str()) && !name.contains('.')) {
            return Err(OvError::DeviceUnavailable { device: name, version: version.to_owned(), available });
        }
    }
    Ok(())
}

/// [`DeviceProperties`] answered by the OpenVINO core, each query asked at most once.
#[derive(Default)]
pub(super) struct CoreProps {
    /// The core's device list, asked for only when a bare `AUTO` needs it.
    available: OnceCell<Vec<String>>,
    /// Each device's `SUPPORTED_PROPERTIES`, asked for once per device.
    supported: RefCell<HashMap<String, Vec<String>>>,
}
/// Read-only properties OpenVINO lists among a device's supported ones.
const READ_ONLY: &[&str] = &[
    "AVAILABLE_DEVICES",
    "SUPPORTED_PROPERTIES",
    "RANGE_FOR_ASYNC_INFER_REQUESTS",
    "RANGE_FOR_STREAMS",
    "FULL_DEVICE_NAME",
    "OPTIMIZATION_CAPABILITIES",
    "DEVICE_ARCHITECTURE",
    "DEVICE_TYPE",
    "DEVICE_ID",
    "EXECUTION_DEVICES",
    "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
    "CACHING_PROPERTIES",
    "DEVICE_GOPS",
    "DEVICE_UUID",
    "DEVICE_LUID",
    "CPU_DENORMALS_OPTIMIZATION_SUPPORTED",
];

impl DeviceProperties for CoreProps {
    fn supported(&self, device: &str, key: &str) -> bool {
        let Ok(core) = ffi::core() else { return false };
        let mut cache = self.supported.borrow_mut();
        let keys = cache.entry(device.to_owned()).or_insert_with(|| {
            core.property(device, "SUPPORTED_PROPERTIES")
                .map(|s| s.split([' ', ',', '\n']).map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).collect())
                .unwrap_or_default()
        });
        keys.iter().any(|k| k == key)
    }
    fn mutable(&self, _device: &str, key: &str) -> bool {
        !READ_ONLY.contains(&key)
    }
    fn available_devices(&self) -> Vec<String> {
        self.available
            .get_or_init(|| ffi::core().ok().and_then(|c| c.available_devices().ok()).unwrap_or_default())
            .clone()
    }
}
