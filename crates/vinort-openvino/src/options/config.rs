//! `load_config`: per-device OpenVINO properties from JSON, and value checks for well-known keys.

use std::path::Path;

use super::OptionError;
use super::device::parse_scope_name;

/// The `load_config` option: `{"DEVICE": {"PROPERTY": "VALUE", ...}, ...}`.
///
/// Device scoping is kept: each entry applies only to the device it names (see
/// [`OpenVinoOptions::compile_properties`](super::OpenVinoOptions::compile_properties)).
/// Device names are canonicalised (`cpu` -> `CPU`); property keys are kept as written, since
/// OpenVINO keys are case-sensitive. JSON numbers become their decimal text and booleans
/// `true`/`false` (OpenVINO 2026.4.1 accepts `true`/`false`/`YES`/`NO`/`on`/`off`/`1`/`0` in any
/// case for boolean properties; verified with the Python package).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadConfig {
    /// `(device, [(key, value)])`, in the JSON file's key order as serde_json reports it (sorted).
    pub devices: Vec<(String, Vec<(String, String)>)>,
}

impl LoadConfig {
    /// Parses the option value the way ONNX Runtime does: a JSON object written inline, or the path
    /// of a file holding one.
    pub fn parse(value: &str) -> Result<LoadConfig, OptionError> {
        let trimmed = value.trim();
        if trimmed.starts_with(['{', '[', '"']) {
            return LoadConfig::from_json_str(trimmed);
        }
        let path = Path::new(trimmed);
        if path.is_file() {
            return LoadConfig::from_path(path);
        }
        // Bare JSON scalars (`42`, `true`) are JSON, just not objects: report that, not a missing file.
        if serde_json::from_str::<serde_json::Value>(trimmed).is_ok() {
            return LoadConfig::from_json_str(trimmed);
        }
        LoadConfig::from_path(path)
    }

    /// Reads and parses a JSON file.
    pub fn from_path(path: &Path) -> Result<LoadConfig, OptionError> {
        let text = std::fs::read_to_string(path).map_err(|e| OptionError::LoadConfigIo {
            path: path.display().to_string(),
            reason: format!("{e} (the value is neither a JSON object nor a readable file)"),
        })?;
        LoadConfig::from_json_str(&text)
    }

    /// Parses JSON text; every property value is checked with [`validate_property_value`].
    pub fn from_json_str(text: &str) -> Result<LoadConfig, OptionError> {
        let bad = |reason: String| OptionError::LoadConfig { reason };
        let root: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
        let serde_json::Value::Object(root) = root else {
            return Err(bad(format!(
                "expected a JSON object of devices like {{\"CPU\": {{\"NUM_STREAMS\": \"2\"}}}}, got {}",
                json_kind(&root)
            )));
        };
        let mut devices: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for (device, props) in root {
            let canonical = parse_scope_name(&device)
                .map_err(|e| bad(format!("device key `{device}` is not a device name: {e}")))?;
            let serde_json::Value::Object(props) = props else {
                return Err(bad(format!(
                    "the value for device `{device}` must be an object of properties, got {}",
                    json_kind(&props)
                )));
            };
            let mut list = Vec::new();
            for (key, v) in props {
                let value = match v {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Bool(b) => b.to_string(),
                    other => {
                        return Err(OptionError::InvalidPropertyValue {
                            device: canonical.clone(),
                            key,
                            value: other.to_string(),
                            expected: "a JSON string, number or boolean".to_owned(),
                        });
                    }
                };
                validate_property_value(&canonical, &key, &value)?;
                list.push((key, value));
            }
            // `cpu` and `CPU` both canonicalise to `CPU`: merge so each device appears once.
            match devices.iter_mut().find(|(d, _)| *d == canonical) {
                Some((_, existing)) => {
                    for (k, v) in list {
                        match existing.iter_mut().find(|(ek, _)| *ek == k) {
                            Some(slot) => slot.1 = v,
                            None => existing.push((k, v)),
                        }
                    }
                }
                None => devices.push((canonical, list)),
            }
        }
        Ok(LoadConfig { devices })
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Boolean-valued properties whose values are checked.
const BOOL_KEYS: &[&str] = &[
    "PERF_COUNT",
    "ENABLE_CPU_PINNING",
    "ENABLE_CPU_RESERVATION",
    "ENABLE_HYPER_THREADING",
    "CPU_DENORMALS_OPTIMIZATION",
    "ENABLE_TENSOR_PARALLEL",
    "ENABLE_WEIGHTLESS",
    "ENABLE_MMAP",
    "ENABLE_STARTUP_FALLBACK",
    "ENABLE_RUNTIME_FALLBACK",
    "EXCLUSIVE_ASYNC_REQUESTS",
    "ENABLE_PROFILING",
];

/// Checks a property value against the domain OpenVINO accepts for well-known keys; values of other
/// keys pass through for OpenVINO to judge.
///
/// Domains verified against OpenVINO 2026.4.1's CPU plugin (Python package, `compile_model` with
/// string values): `INFERENCE_PRECISION_HINT` accepts `f32`, `f16`, `bf16`, `undefined` (exact
/// case; `F32`/`fp32` rejected); `PERFORMANCE_HINT` and `EXECUTION_MODE_HINT` are upper-case only;
/// `NUM_STREAMS` accepts integers (`-1` = AUTO, `-2` = NUMA) and `AUTO`/`NUMA` (upper case only);
/// `INFERENCE_NUM_THREADS` and `PERFORMANCE_HINT_NUM_REQUESTS` need integers >= 0;
/// `DYNAMIC_QUANTIZATION_GROUP_SIZE` an unsigned integer; booleans accept
/// yes/no/true/false/on/off/1/0 in any case (`y`, `2` rejected); `LOG_LEVEL` takes
/// `LOG_NONE`..`LOG_TRACE`; `SCHEDULING_CORE_TYPE` `ANY_CORE`/`PCORE_ONLY`/`ECORE_ONLY`.
pub fn validate_property_value(device: &str, key: &str, value: &str) -> Result<(), OptionError> {
    let one_of = |allowed: &[&str]| -> Result<(), String> {
        if allowed.contains(&value) { Ok(()) } else { Err(format!("one of {}", allowed.join(", "))) }
    };
    let int_at_least = |min: i64, what: &str| -> Result<(), String> {
        match value.trim().parse::<i64>() {
            Ok(n) if n >= min => Ok(()),
            _ => Err(what.to_owned()),
        }
    };
    let check = match key {
        "INFERENCE_PRECISION_HINT" => one_of(&["f32", "f16", "bf16", "undefined"]),
        "PERFORMANCE_HINT" => one_of(&["LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"]),
        "EXECUTION_MODE_HINT" => one_of(&["PERFORMANCE", "ACCURACY"]),
        "MODEL_PRIORITY" => one_of(&["LOW", "MEDIUM", "HIGH"]),
        "SCHEDULING_CORE_TYPE" => one_of(&["ANY_CORE", "PCORE_ONLY", "ECORE_ONLY"]),
        "LOG_LEVEL" => one_of(&["LOG_NONE", "LOG_ERROR", "LOG_WARNING", "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"]),
        "CACHE_MODE" => one_of(&["OPTIMIZE_SIZE", "OPTIMIZE_SPEED"]),
        "NUM_STREAMS" => {
            if value == "AUTO" || value == "NUMA" {
                Ok(())
            } else {
                int_at_least(-2, "an integer >= 0, AUTO (or -1) or NUMA (or -2)")
            }
        }
        "INFERENCE_NUM_THREADS" | "PERFORMANCE_HINT_NUM_REQUESTS" => int_at_least(0, "an integer >= 0"),
        "DYNAMIC_QUANTIZATION_GROUP_SIZE" => match value.trim().parse::<u64>() {
            Ok(_) => Ok(()),
            Err(_) => Err("an unsigned integer (0 disables dynamic quantization)".to_owned()),
        },
        "CACHE_DIR" if value.is_empty() => Err("a non-empty directory path".to_owned()),
        k if BOOL_KEYS.contains(&k) => {
            const BOOLS: [&str; 8] = ["YES", "NO", "TRUE", "FALSE", "ON", "OFF", "1", "0"];
            if BOOLS.contains(&value.trim().to_ascii_uppercase().as_str()) {
                Ok(())
            } else {
                Err("a boolean: YES/NO, true/false, on/off or 1/0".to_owned())
            }
        }
        _ => Ok(()),
    };
    check.map_err(|expected| OptionError::InvalidPropertyValue {
        device: device.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
        expected,
    })
}
