use std::collections::HashMap;
use std::num::NonZeroU32;

use super::*;

/// CPU, AUTO, MULTI and HETERO lists copied from OpenVINO 2026.4.1's SUPPORTED_PROPERTIES; GPU and
/// NPU are plausible stand-ins (no such devices on the machine).
struct FakeDevices {
    props: HashMap<&'static str, HashMap<&'static str, bool>>,
    available: Vec<String>,
}

impl FakeDevices {
    fn new() -> Self {
        let cpu_rw = [
            "NUM_STREAMS",
            "INFERENCE_NUM_THREADS",
            "PERF_COUNT",
            "INFERENCE_PRECISION_HINT",
            "PERFORMANCE_HINT",
            "EXECUTION_MODE_HINT",
            "PERFORMANCE_HINT_NUM_REQUESTS",
            "ENABLE_CPU_PINNING",
            "ENABLE_HYPER_THREADING",
            "SCHEDULING_CORE_TYPE",
            "LOG_LEVEL",
            "DYNAMIC_QUANTIZATION_GROUP_SIZE",
            "KV_CACHE_PRECISION",
        ];
        let cpu_ro = ["SUPPORTED_PROPERTIES", "FULL_DEVICE_NAME", "OPTIMIZATION_CAPABILITIES", "RANGE_FOR_STREAMS"];
        let gpu_rw = [
            "NUM_STREAMS",
            "INFERENCE_PRECISION_HINT",
            "EXECUTION_MODE_HINT",
            "PERFORMANCE_HINT",
            "MODEL_PRIORITY",
            "PERF_COUNT",
            "DYNAMIC_QUANTIZATION_GROUP_SIZE",
            "GPU_QUEUE_THROTTLE",
        ];
        let npu_rw = ["PERFORMANCE_HINT", "NUM_STREAMS", "MODEL_PRIORITY"];
        let auto_rw =
            ["MODEL_PRIORITY", "PERFORMANCE_HINT", "EXECUTION_MODE_HINT", "LOG_LEVEL", "ENABLE_RUNTIME_FALLBACK"];
        let hetero_rw = ["MULTI_DEVICE_PRIORITIES", "MODEL_DISTRIBUTION_POLICY"];
        let mut props: HashMap<&'static str, HashMap<&'static str, bool>> = HashMap::new();
        let mut add = |dev: &'static str, rw: &[&'static str], ro: &[&'static str]| {
            let m = props.entry(dev).or_default();
            m.extend(rw.iter().map(|k| (*k, true)));
            m.extend(ro.iter().map(|k| (*k, false)));
        };
        add("CPU", &cpu_rw, &cpu_ro);
        for gpu in ["GPU", "GPU.0", "GPU.1"] {
            add(gpu, &gpu_rw, &["FULL_DEVICE_NAME"]);
        }
        add("NPU", &npu_rw, &["FULL_DEVICE_NAME"]);
        add("AUTO", &auto_rw, &["FULL_DEVICE_NAME"]);
        add("MULTI", &auto_rw, &["FULL_DEVICE_NAME"]);
        add("HETERO", &hetero_rw, &["FULL_DEVICE_NAME"]);
        FakeDevices { props, available: vec![] }
    }
}

impl DeviceProperties for FakeDevices {
    fn supported(&self, device: &str, key: &str) -> bool {
        self.props.get(device).is_some_and(|m| m.contains_key(key))
    }
    fn mutable(&self, device: &str, key: &str) -> bool {
        self.props.get(device).and_then(|m| m.get(key)).copied().unwrap_or(false)
    }
    fn available_devices(&self) -> Vec<String> {
        self.available.clone()
    }
}

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap()
}

fn props(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The CPU defaults (f32 inference, dynamic quantisation off) followed by `rest`.
fn cpu_f32_and(rest: &[(&str, &str)]) -> Vec<(String, String)> {
    props(
        &[("INFERENCE_PRECISION_HINT", "f32"), ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "0")]
            .iter()
            .chain(rest)
            .copied()
            .collect::<Vec<_>>(),
    )
}

fn resolve(o: &OpenVinoOptions) -> Resolved {
    o.compile_properties(&FakeDevices::new()).unwrap()
}

fn set(pairs: &[(&str, &str)]) -> OpenVinoOptions {
    let mut o = OpenVinoOptions::default();
    for (k, v) in pairs {
        o.set(k, v).unwrap();
    }
    o
}

fn device_err(s: &str) -> String {
    let e = s.parse::<Device>().unwrap_err();
    assert!(matches!(e, OptionError::InvalidDevice { .. }), "{s}: {e:?}");
    e.to_string()
}

// ---------- device_type ----------

#[test]
fn device_parses_every_form_and_displays_openvino_string() {
    let cases = [
        ("CPU", Device::CPU),
        ("gpu", Device::GPU),
        ("GPU.1", Device::Single(PhysicalDevice::Gpu(Some(1)))),
        ("GPU.0.1", Device::Single(PhysicalDevice::GpuTile(0, 1))),
        ("NPU", Device::NPU),
        ("AUTO", Device::Auto(vec![])),
        ("AUTO:GPU,CPU", Device::Auto(vec![PhysicalDevice::Gpu(None), PhysicalDevice::Cpu])),
        ("HETERO:GPU.0, CPU", Device::Hetero(vec![PhysicalDevice::Gpu(Some(0)), PhysicalDevice::Cpu])),
        (
            "MULTI:GPU.1,GPU.0,CPU",
            Device::Multi(vec![PhysicalDevice::Gpu(Some(1)), PhysicalDevice::Gpu(Some(0)), PhysicalDevice::Cpu]),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(text.parse::<Device>().unwrap(), expected, "{text}");
    }
    assert_eq!("hetero:gpu.0, cpu".parse::<Device>().unwrap().to_string(), "HETERO:GPU.0,CPU");
    assert_eq!("AUTO".parse::<Device>().unwrap().to_string(), "AUTO");
    assert_eq!("GPU.0.1".parse::<Device>().unwrap().to_string(), "GPU.0.1");
    assert_eq!("MULTI:NPU,CPU".parse::<Device>().unwrap().to_string(), "MULTI:NPU,CPU");
}

#[test]
fn device_lists_physical_devices() {
    let d: Device = "HETERO:GPU.0,CPU".parse().unwrap();
    assert_eq!(d.physical_devices(), &[PhysicalDevice::Gpu(Some(0)), PhysicalDevice::Cpu]);
    assert_eq!(d.meta_name(), Some("HETERO"));
    assert_eq!(Device::CPU.physical_devices(), &[PhysicalDevice::Cpu]);
    assert_eq!(Device::CPU.meta_name(), None);
    assert!(Device::Auto(vec![]).physical_devices().is_empty());
}

#[test]
fn device_errors_name_the_bad_token_and_valid_forms() {
    let e = device_err("TPU");
    assert!(e.contains("unknown device `TPU`") && e.contains("GPU.<N>") && e.contains("HETERO:"), "{e}");
    let e = device_err("HETERO:GPU,FPGA");
    assert!(e.contains("`FPGA`"), "{e}");
    let e = device_err("GPU.x");
    assert!(e.contains("`x`") && e.contains("GPU.x"), "{e}");
    assert!(device_err("GPU.-1").contains("`-1`"));
    assert!(device_err("GPU.0.1.2").contains("too many"));
    assert!(device_err("CPU.0").contains("no index"));
    assert!(device_err("").contains("empty"));
}

#[test]
fn meta_devices_need_enough_distinct_unnested_devices() {
    assert!(device_err("HETERO:CPU").contains("at least two"));
    assert!(device_err("MULTI:GPU").contains("at least two"));
    assert!(device_err("AUTO:CPU").contains("at least two"));
    assert!(device_err("HETERO").contains("needs a device list"));
    assert!(device_err("MULTI").contains("needs a device list"));
    assert!(device_err("HETERO:").contains("empty device name"));
    assert!(device_err("HETERO:GPU,,CPU").contains("empty device name"));
    let e = device_err("HETERO:CPU,CPU");
    assert!(e.contains("listed twice"), "{e}");
    // OpenVINO resolves a bare GPU to GPU.0.
    assert!(device_err("MULTI:GPU,GPU.0").contains("listed twice"));
    assert!("MULTI:GPU.0,GPU.1".parse::<Device>().is_ok());
    let e = device_err("HETERO:AUTO:GPU,CPU");
    assert!(e.contains("cannot be nested"), "{e}");
    assert!(device_err("MULTI:GPU,HETERO").contains("cannot be nested"));
    assert!(device_err("CPU:GPU,NPU").contains("not a meta device"));
    // Hand-built values are validated when resolving.
    let bad = OpenVinoOptions::default().device(Device::Hetero(vec![PhysicalDevice::Cpu]));
    assert!(matches!(bad.compile_properties(&FakeDevices::new()), Err(OptionError::InvalidDevice { .. })));
}

// ---------- scalar options, string and CLI forms ----------

#[test]
fn precision_and_priority_parse_case_insensitively() {
    assert_eq!("fp32".parse::<Precision>().unwrap(), Precision::Fp32);
    assert_eq!("FP16".parse::<Precision>().unwrap(), Precision::Fp16);
    assert_eq!("Accuracy".parse::<Precision>().unwrap(), Precision::Accuracy);
    assert_eq!("default".parse::<Precision>().unwrap(), Precision::Default);
    let e = "BF16".parse::<Precision>().unwrap_err().to_string();
    assert!(e.contains("precision") && e.contains("BF16") && e.contains("FP32, FP16, ACCURACY"), "{e}");
    assert_eq!("high".parse::<ModelPriority>().unwrap(), ModelPriority::High);
    assert_eq!("LOW".parse::<ModelPriority>().unwrap(), ModelPriority::Low);
    assert_eq!("MEDIUM".parse::<ModelPriority>().unwrap(), ModelPriority::Medium);
    assert_eq!("DEFAULT".parse::<ModelPriority>().unwrap(), ModelPriority::Default);
    assert!("URGENT".parse::<ModelPriority>().unwrap_err().to_string().contains("LOW, MEDIUM, HIGH"));
}

#[test]
fn set_accepts_every_ovep_key() {
    let o = set(&[
        ("device_type", "HETERO:GPU,CPU"),
        ("precision", "FP16"),
        ("num_of_threads", "4"),
        ("num_streams", "2"),
        ("cache_dir", "/tmp/ov cache"),
        ("load_config", r#"{"CPU":{"PERF_COUNT":"YES"}}"#),
        ("model_priority", "HIGH"),
        ("enable_qdq_optimizer", "true"),
        ("disable_dynamic_shapes", "1"),
        ("reshape_input", "data[1,3,60,80..120]"),
        ("layout", "data[NCHW]"),
    ]);
    assert_eq!(o.device.to_string(), "HETERO:GPU,CPU");
    assert_eq!(o.precision, Some(Precision::Fp16));
    assert_eq!(o.num_of_threads, Some(nz(4)));
    assert_eq!(o.num_streams, Some(nz(2)));
    assert_eq!(o.cache_dir.as_deref(), Some(std::path::Path::new("/tmp/ov cache")));
    assert_eq!(o.load_config.as_ref().unwrap().devices, vec![("CPU".to_owned(), props(&[("PERF_COUNT", "YES")]))]);
    assert_eq!(o.model_priority, ModelPriority::High);
    assert!(o.enable_qdq_optimizer && o.disable_dynamic_shapes);
    assert_eq!(o.reshape_input.as_ref().unwrap().to_string(), "data[1,3,60,80..120]");
    assert_eq!(o.layout.as_ref().unwrap().to_string(), "data[NCHW]");

    let mut o = o;
    o.set("enable_qdq_optimizer", "FALSE").unwrap();
    o.set("disable_dynamic_shapes", "0").unwrap();
    o.set("cache_dir", "").unwrap();
    assert!(!o.enable_qdq_optimizer && !o.disable_dynamic_shapes && o.cache_dir.is_none());
}

#[test]
fn typed_builders_match_string_form() {
    let typed = OpenVinoOptions::default()
        .device(Device::GPU)
        .precision(Precision::Fp32)
        .num_of_threads(nz(3))
        .num_streams(nz(2))
        .cache_dir("/tmp/c")
        .model_priority(ModelPriority::Low)
        .enable_qdq_optimizer(true)
        .disable_dynamic_shapes(true)
        .reshape_input("x[1,?]".parse().unwrap())
        .layout("x[NC]".parse().unwrap())
        .load_config(LoadConfig::parse(r#"{"GPU":{"PERF_COUNT":true}}"#).unwrap());
    let strings = set(&[
        ("device_type", "GPU"),
        ("precision", "fp32"),
        ("num_of_threads", "3"),
        ("num_streams", "2"),
        ("cache_dir", "/tmp/c"),
        ("model_priority", "low"),
        ("enable_qdq_optimizer", "True"),
        ("disable_dynamic_shapes", "true"),
        ("reshape_input", "x[1,-1]"),
        ("layout", "x[nc]"),
        ("load_config", r#"{"gpu":{"PERF_COUNT":true}}"#),
    ]);
    assert_eq!(format!("{typed:?}"), format!("{strings:?}"));
    assert_eq!(resolve(&typed), resolve(&strings));
}

#[test]
fn set_rejects_bad_scalars_with_useful_messages() {
    let mut o = OpenVinoOptions::default();
    let e = o.set("num_threads", "4").unwrap_err().to_string();
    assert!(e.contains("`num_threads`") && e.contains("num_of_threads") && e.contains("reshape_input"), "{e}");
    for (key, value, expected) in [
        ("num_of_threads", "0", "an integer from 1"),
        ("num_of_threads", "-2", "an integer from 1"),
        ("num_streams", "two", "an integer from 1"),
        ("enable_qdq_optimizer", "yes", "true, false, 1 or 0"),
        ("disable_dynamic_shapes", "2", "true, false, 1 or 0"),
        ("model_priority", "URGENT", "LOW"),
        ("precision", "INT8", "FP32"),
    ] {
        let e = o.set(key, value).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(value) && e.contains(expected), "{key}={value}: {e}");
    }
    assert!(matches!(o.set("device_type", "FPGA"), Err(OptionError::InvalidDevice { .. })));
}

#[test]
fn parse_cli_reads_key_value_pairs() {
    let o = OpenVinoOptions::parse_cli("device_type|GPU.1 precision|FP32  num_streams|2 num_of_threads|8").unwrap();
    assert_eq!(o.device, Device::Single(PhysicalDevice::Gpu(Some(1))));
    assert_eq!(o.precision, Some(Precision::Fp32));
    assert_eq!(o.num_streams, Some(nz(2)));
    assert_eq!(o.num_of_threads, Some(nz(8)));
    let o = OpenVinoOptions::parse_cli(r#"load_config|{"CPU":{"NUM_STREAMS":"2"}} reshape_input|a[1,2],b[?]"#).unwrap();
    assert_eq!(o.load_config.unwrap().devices[0].1, props(&[("NUM_STREAMS", "2")]));
    assert_eq!(o.reshape_input.unwrap().inputs.len(), 2);
    assert_eq!(OpenVinoOptions::parse_cli("").unwrap().device, Device::CPU);
    let e = OpenVinoOptions::parse_cli("device_type|CPU precision").unwrap_err();
    assert!(matches!(&e, OptionError::Cli { token, .. } if token == "precision"), "{e:?}");
    assert!(matches!(OpenVinoOptions::parse_cli("|CPU"), Err(OptionError::Cli { .. })));
    assert!(matches!(OpenVinoOptions::parse_cli("bogus|1"), Err(OptionError::UnknownOption { .. })));
    assert!(matches!(OpenVinoOptions::parse_cli("num_streams|0"), Err(OptionError::InvalidValue { .. })));
}

// ---------- reshape_input and layout ----------

#[test]
fn reshape_input_parses_fixed_bounded_and_dynamic_dims() {
    let r: ReshapeInput = "data[1,3,60,80..120], mask [ 1 , ? ,-1]".parse().unwrap();
    assert_eq!(r.inputs.len(), 2);
    assert_eq!(r.inputs[0].name, "data");
    assert_eq!(
        r.inputs[0].dims,
        vec![Dim::Fixed(1), Dim::Fixed(3), Dim::Fixed(60), Dim::Bounded { min: 80, max: 120 }]
    );
    assert_eq!(r.inputs[1].name, "mask");
    assert_eq!(r.inputs[1].dims, vec![Dim::Fixed(1), Dim::Dynamic, Dim::Dynamic]);
    assert_eq!(r.inputs[0].partial_shape(), "[1,3,60,80..120]");
    assert_eq!(r.to_string(), "data[1,3,60,80..120],mask[1,?,?]");
    let r: ReshapeInput = "x:0[5..5]".parse().unwrap();
    assert_eq!(r.inputs[0].name, "x:0");
    assert_eq!(r.inputs[0].dims, vec![Dim::Bounded { min: 5, max: 5 }]);
}

#[test]
fn reshape_input_errors_name_position_and_token() {
    let err = |s: &str| match s.parse::<ReshapeInput>() {
        Err(OptionError::Syntax { option: "reshape_input", position, reason, .. }) => (position, reason),
        other => panic!("{s}: {other:?}"),
    };
    let (pos, reason) = err("data[1,3");
    assert_eq!(pos, 4);
    assert!(reason.contains("unclosed `[`") && reason.contains("data"), "{reason}");
    let (pos, reason) = err("data[1,5..3]");
    assert_eq!(pos, 7);
    assert!(reason.contains("5..3") && reason.contains("greater"), "{reason}");
    let (pos, reason) = err("data[1,abc]");
    assert_eq!(pos, 7);
    assert!(reason.contains("`abc`") && reason.contains("N, A..B, ? or -1"), "{reason}");
    assert!(err("data[1,,2]").1.contains("empty dimension"));
    assert!(err("data[]").1.contains("empty dimension"));
    assert!(err("data[1..x]").1.contains("`x`"));
    assert!(err("data[-2]").1.contains("`-2`"));
    assert!(err("data").1.contains("no `[`"));
    assert!(err("[1,2]").1.contains("missing input name"));
    assert!(err("a[1] b[2]").1.contains("expected `,`"));
    assert!(err("a[1],").1.contains("trailing"));
    assert!(err("a[1],a[2]").1.contains("twice"));
    assert!(err("a[1[2]]").1.contains("unclosed"));
    assert!(err("").1.contains("empty"));
    let msg = "data[1,abc]".parse::<ReshapeInput>().unwrap_err().to_string();
    assert!(msg.contains("reshape_input") && msg.contains("byte 7") && msg.contains("data[1,abc]"), "{msg}");
}

#[test]
fn layout_parses_and_rejects_bad_layouts() {
    let l: LayoutSpec = "data[NCHW],out[nc],x[N??C]".parse().unwrap();
    let got: Vec<(&str, &str)> = l.entries.iter().map(|(n, l)| (n.as_str(), l.as_str())).collect();
    assert_eq!(got, vec![("data", "NCHW"), ("out", "NC"), ("x", "N??C")]);
    let err = |s: &str| match s.parse::<LayoutSpec>() {
        Err(OptionError::Syntax { option: "layout", position, reason, .. }) => (position, reason),
        other => panic!("{s}: {other:?}"),
    };
    let (pos, reason) = err("data[NCHN]");
    assert_eq!(pos, 8);
    assert!(reason.contains("`N` appears twice"), "{reason}");
    assert!(err("data[NcHn]").1.contains("twice"));
    let (pos, reason) = err("data[NC1W]");
    assert_eq!(pos, 7);
    assert!(reason.contains("`1`"), "{reason}");
    assert!(err("data[N,C]").1.contains("`,`"));
    assert!(err("data[]").1.contains("empty layout"));
    assert!(err("data[NCHW").1.contains("unclosed"));
    assert!(err("a[N],a[C]").1.contains("twice"));
}

// ---------- load_config parsing ----------

#[test]
fn load_config_converts_values_and_keeps_device_scoping() {
    let c = LoadConfig::parse(
        r#"{"CPU": {"NUM_STREAMS": 2, "PERF_COUNT": true, "INFERENCE_PRECISION_HINT": "f32"},
            "GPU.1": {"PERFORMANCE_HINT": "THROUGHPUT", "SOME_GPU_KEY": 1.5}}"#,
    )
    .unwrap();
    let cpu = props(&[("INFERENCE_PRECISION_HINT", "f32"), ("NUM_STREAMS", "2"), ("PERF_COUNT", "true")]);
    let gpu = props(&[("PERFORMANCE_HINT", "THROUGHPUT"), ("SOME_GPU_KEY", "1.5")]);
    assert_eq!(c.devices, vec![("CPU".to_owned(), cpu), ("GPU.1".to_owned(), gpu)]);
}

#[test]
fn load_config_reads_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ov.json");
    std::fs::write(&path, r#"{"AUTO": {"MODEL_PRIORITY": "HIGH"}}"#).unwrap();
    let mut o = OpenVinoOptions::default();
    o.set("load_config", path.to_str().unwrap()).unwrap();
    assert_eq!(o.load_config.unwrap().devices, vec![("AUTO".to_owned(), props(&[("MODEL_PRIORITY", "HIGH")]))]);
    let missing = dir.path().join("missing.json");
    let e = OpenVinoOptions::default().set("load_config", missing.to_str().unwrap()).unwrap_err();
    assert!(matches!(&e, OptionError::LoadConfigIo { path, .. } if path.ends_with("missing.json")), "{e:?}");
    std::fs::write(&path, "{\"CPU\": ").unwrap();
    assert!(matches!(LoadConfig::parse(path.to_str().unwrap()), Err(OptionError::LoadConfig { .. })));
}

#[test]
fn load_config_rejects_malformed_or_misshapen_json() {
    let reason = |s: &str| match LoadConfig::parse(s) {
        Err(OptionError::LoadConfig { reason }) => reason,
        other => panic!("{s}: {other:?}"),
    };
    let r = reason(r#"{"CPU": {"NUM_STREAMS": "2"}"#);
    assert!(r.contains("malformed JSON") && r.contains("line 1"), "{r}");
    assert!(reason("[1, 2]").contains("expected a JSON object") && reason("[1, 2]").contains("an array"));
    assert!(reason("42").contains("a number"));
    assert!(reason(r#""CPU""#).contains("a string"));
    assert!(reason(r#"{"CPU": "NUM_STREAMS=2"}"#).contains("device `CPU` must be an object"));
    assert!(reason(r#"{"FPGA": {}}"#).contains("`FPGA` is not a device name"));
    let e = LoadConfig::parse(r#"{"CPU": {"NUM_STREAMS": [2]}}"#).unwrap_err();
    assert!(
        matches!(&e, OptionError::InvalidPropertyValue { device, key, .. } if device == "CPU" && key == "NUM_STREAMS")
    );
    assert!(e.to_string().contains("JSON string, number or boolean"), "{e}");
    assert!(matches!(LoadConfig::parse(r#"{"CPU": {"X": null}}"#), Err(OptionError::InvalidPropertyValue { .. })));
}

#[test]
fn load_config_rejects_invalid_values_of_known_keys() {
    for (key, bad) in [
        ("INFERENCE_PRECISION_HINT", "\"fp32\""),
        ("INFERENCE_PRECISION_HINT", "\"F32\""),
        ("PERFORMANCE_HINT", "\"latency\""),
        ("EXECUTION_MODE_HINT", "\"FAST\""),
        ("NUM_STREAMS", "\"auto\""),
        ("NUM_STREAMS", "-3"),
        ("INFERENCE_NUM_THREADS", "-1"),
        ("INFERENCE_NUM_THREADS", "\"many\""),
        ("PERFORMANCE_HINT_NUM_REQUESTS", "-1"),
        ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "\"x\""),
        ("PERF_COUNT", "\"maybe\""),
        ("ENABLE_CPU_PINNING", "2"),
        ("MODEL_PRIORITY", "\"URGENT\""),
        ("LOG_LEVEL", "\"ERR\""),
        ("SCHEDULING_CORE_TYPE", "\"BAD\""),
    ] {
        let json = format!(r#"{{"CPU": {{"{key}": {bad}}}}}"#);
        match LoadConfig::parse(&json) {
            Err(e @ OptionError::InvalidPropertyValue { .. }) => {
                let m = e.to_string();
                assert!(m.contains("`CPU`") && m.contains(key) && m.contains(bad.trim_matches('"')), "{m}");
            }
            other => panic!("{key}={bad}: {other:?}"),
        }
    }
    for (key, good) in [
        ("INFERENCE_PRECISION_HINT", "\"bf16\""),
        ("NUM_STREAMS", "\"AUTO\""),
        ("NUM_STREAMS", "\"NUMA\""),
        ("NUM_STREAMS", "-1"),
        ("NUM_STREAMS", "4"),
        ("INFERENCE_NUM_THREADS", "0"),
        ("PERF_COUNT", "\"no\""),
        ("ENABLE_CPU_PINNING", "false"),
        ("ENABLE_HYPER_THREADING", "\"OFF\""),
        ("EXECUTION_MODE_HINT", "\"ACCURACY\""),
        ("PERFORMANCE_HINT", "\"CUMULATIVE_THROUGHPUT\""),
        ("KV_CACHE_PRECISION", "\"anything\""),
    ] {
        let json = format!(r#"{{"CPU": {{"{key}": {good}}}}}"#);
        assert!(LoadConfig::parse(&json).is_ok(), "{key}={good}");
    }
}

// ---------- resolution: single devices ----------

#[test]
fn cpu_default_precision_is_fp32_with_both_hints() {
    let r = resolve(&OpenVinoOptions::default());
    assert_eq!(r.device, "CPU");
    assert_eq!(r.properties, props(&[("INFERENCE_PRECISION_HINT", "f32"), ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "0")]));
    assert!(r.core_properties.is_empty() && r.device_properties.is_empty() && r.warnings.is_empty());
    let explicit = resolve(&OpenVinoOptions::default().precision(Precision::Fp32));
    assert_eq!(explicit.properties, r.properties);
}

#[test]
fn precision_maps_per_device() {
    let p = |device: Device, precision: Option<Precision>| {
        let mut o = OpenVinoOptions::default().device(device);
        o.precision = precision;
        resolve(&o).properties
    };
    assert_eq!(p(Device::CPU, Some(Precision::Fp16)), props(&[("INFERENCE_PRECISION_HINT", "f16")]));
    assert_eq!(p(Device::CPU, Some(Precision::Accuracy)), props(&[("EXECUTION_MODE_HINT", "ACCURACY")]));
    assert_eq!(p(Device::CPU, Some(Precision::Default)), props(&[]));
    assert_eq!(p(Device::GPU, None), props(&[("INFERENCE_PRECISION_HINT", "f16")]));
    assert_eq!(p(Device::GPU, Some(Precision::Fp16)), props(&[("INFERENCE_PRECISION_HINT", "f16")]));
    assert_eq!(p(Device::GPU, Some(Precision::Fp32)), props(&[("INFERENCE_PRECISION_HINT", "f32")]));
    assert_eq!(p(Device::GPU, Some(Precision::Accuracy)), props(&[("EXECUTION_MODE_HINT", "ACCURACY")]));
    assert_eq!(p(Device::GPU, Some(Precision::Default)), props(&[]));
    assert_eq!(p(Device::NPU, None), props(&[]));
    assert_eq!(p(Device::NPU, Some(Precision::Fp16)), props(&[]));
}

#[test]
fn npu_rejects_fp32_and_accuracy() {
    for precision in [Precision::Fp32, Precision::Accuracy] {
        let o = OpenVinoOptions::default().device(Device::NPU).precision(precision);
        let e = o.compile_properties(&FakeDevices::new()).unwrap_err();
        assert!(matches!(e, OptionError::UnsupportedPrecision { .. }));
        let m = e.to_string();
        assert!(m.contains("NPU") && m.contains(&precision.to_string()) && m.contains("FP16"), "{m}");
    }
    let o = set(&[("device_type", "HETERO:NPU,CPU"), ("precision", "FP32")]);
    assert!(matches!(o.compile_properties(&FakeDevices::new()), Err(OptionError::UnsupportedPrecision { .. })));
}

#[test]
fn threads_streams_priority_and_cache_dir_map() {
    let o = set(&[("num_of_threads", "4"), ("num_streams", "2"), ("cache_dir", "/tmp/ov"), ("model_priority", "HIGH")]);
    let r = resolve(&o);
    assert_eq!(r.properties, cpu_f32_and(&[("NUM_STREAMS", "2"), ("INFERENCE_NUM_THREADS", "4")]));
    assert_eq!(r.core_properties, props(&[("CACHE_DIR", "/tmp/ov")]));
    // The CPU plugin rejects MODEL_PRIORITY (verified), so it is skipped with a warning.
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("MODEL_PRIORITY") && r.warnings[0].contains("CPU"), "{:?}", r.warnings);

    let o = set(&[("device_type", "GPU"), ("num_of_threads", "4"), ("model_priority", "LOW"), ("num_streams", "3")]);
    let r = resolve(&o);
    assert_eq!(
        r.properties,
        props(&[("INFERENCE_PRECISION_HINT", "f16"), ("NUM_STREAMS", "3"), ("MODEL_PRIORITY", "LOW")])
    );
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("num_of_threads applies only to the CPU"), "{:?}", r.warnings);

    let r = resolve(&set(&[("device_type", "AUTO:GPU,CPU"), ("model_priority", "MEDIUM")]));
    assert_eq!(r.property("MODEL_PRIORITY"), Some("MEDIUM"));
    let r = resolve(&set(&[("model_priority", "DEFAULT")]));
    assert!(r.property("MODEL_PRIORITY").is_none() && r.warnings.is_empty());
}

#[test]
fn load_config_for_single_device_filters_unknown_and_read_only_keys() {
    let o = set(&[(
        "load_config",
        r#"{"CPU": {"PERFORMANCE_HINT": "THROUGHPUT", "NOT_A_KEY": "1", "FULL_DEVICE_NAME": "x",
                     "CACHE_DIR": "/tmp/lc"},
            "GPU": {"PERFORMANCE_HINT": "LATENCY"}}"#,
    )]);
    let r = resolve(&o);
    assert_eq!(r.properties, cpu_f32_and(&[("PERFORMANCE_HINT", "THROUGHPUT")]));
    assert_eq!(r.core_properties, props(&[("CACHE_DIR", "/tmp/lc")]));
    assert_warnings(
        &r.warnings,
        &[
            &["NOT_A_KEY", "not supported"],
            &["FULL_DEVICE_NAME", "read-only"],
            &["device GPU is not part of device_type CPU"],
        ],
    );
}

#[test]
fn explicit_options_override_load_config_which_overrides_defaults() {
    // load_config beats the implicit CPU FP32 default, including the dynamic-quantisation default.
    let o = set(&[(
        "load_config",
        r#"{"CPU": {"INFERENCE_PRECISION_HINT": "bf16", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 64, "NUM_STREAMS": 4,
                    "INFERENCE_NUM_THREADS": 1}}"#,
    )]);
    let r = resolve(&o);
    assert_eq!(
        r.properties,
        props(&[
            ("INFERENCE_PRECISION_HINT", "bf16"),
            ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "64"),
            ("INFERENCE_NUM_THREADS", "1"),
            ("NUM_STREAMS", "4"),
        ])
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);

    // Explicit typed options beat load_config, keep the key's position and warn.
    let mut o = o;
    o.set("precision", "FP32").unwrap();
    o.set("num_streams", "2").unwrap();
    let r = resolve(&o);
    assert_eq!(
        r.properties,
        props(&[
            ("INFERENCE_PRECISION_HINT", "f32"),
            ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "64"),
            ("INFERENCE_NUM_THREADS", "1"),
            ("NUM_STREAMS", "2"),
        ])
    );
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.contains("INFERENCE_PRECISION_HINT=f32 overrides load_config")));
    assert!(r.warnings.iter().any(|w| w.contains("NUM_STREAMS=2 overrides load_config NUM_STREAMS=4")));

    // Raw properties beat everything, unchecked.
    let r = resolve(&o.clone().property(None, "NUM_STREAMS", "7").property(Some("cpu"), "CUSTOM_KEY", "v"));
    assert_eq!(r.property("NUM_STREAMS"), Some("7"));
    assert_eq!(r.property("CUSTOM_KEY"), Some("v"));
    let mut keys: Vec<&str> = r.properties.iter().map(|(k, _)| k.as_str()).collect();
    let n = keys.len();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), n, "duplicate keys in {:?}", r.properties);

    // An explicit cache_dir beats load_config's.
    let o = set(&[("load_config", r#"{"CPU": {"CACHE_DIR": "/a"}}"#), ("cache_dir", "/b")]);
    assert_eq!(resolve(&o).core_properties, props(&[("CACHE_DIR", "/b")]));
}

#[test]
fn load_config_type_key_applies_to_indexed_device_and_exact_key_wins() {
    let o = set(&[
        ("device_type", "GPU.1"),
        ("load_config", r#"{"GPU": {"PERF_COUNT": "YES", "NUM_STREAMS": 1}, "GPU.1": {"NUM_STREAMS": 2}}"#),
    ]);
    let r = resolve(&o);
    assert_eq!(
        r.properties,
        props(&[("INFERENCE_PRECISION_HINT", "f16"), ("NUM_STREAMS", "2"), ("PERF_COUNT", "YES")])
    );
}

// ---------- resolution: meta devices ----------

#[test]
fn hetero_scopes_precision_and_load_config_per_device() {
    let o = set(&[
        ("device_type", "HETERO:GPU.0,CPU"),
        ("num_of_threads", "4"),
        (
            "load_config",
            r#"{"HETERO": {"MODEL_DISTRIBUTION_POLICY": "PIPELINE_PARALLEL", "PERF_COUNT": "YES"},
                "CPU": {"PERFORMANCE_HINT": "LATENCY", "BOGUS": "1"},
                "GPU.0": {"PERFORMANCE_HINT": "THROUGHPUT"},
                "NPU": {"PERFORMANCE_HINT": "LATENCY"}}"#,
        ),
    ]);
    let r = resolve(&o);
    assert_eq!(r.device, "HETERO:GPU.0,CPU");
    assert_eq!(
        r.device_properties,
        vec![
            ("GPU.0".to_owned(), props(&[("INFERENCE_PRECISION_HINT", "f16"), ("PERFORMANCE_HINT", "THROUGHPUT")])),
            ("CPU".to_owned(), cpu_f32_and(&[("PERFORMANCE_HINT", "LATENCY"), ("INFERENCE_NUM_THREADS", "4")])),
        ]
    );
    assert_eq!(
        r.properties,
        props(&[
            ("MODEL_DISTRIBUTION_POLICY", "PIPELINE_PARALLEL"),
            (
                "DEVICE_PROPERTIES",
                "{GPU.0:{INFERENCE_PRECISION_HINT:f16,PERFORMANCE_HINT:THROUGHPUT},\
                 CPU:{INFERENCE_PRECISION_HINT:f32,DYNAMIC_QUANTIZATION_GROUP_SIZE:0,PERFORMANCE_HINT:LATENCY,\
                 INFERENCE_NUM_THREADS:4}}"
            ),
        ])
    );
    assert_eq!(r.device_property("CPU", "INFERENCE_NUM_THREADS"), Some("4"));
    // PERF_COUNT is not a HETERO property, BOGUS not a CPU one, and NPU is not in the list.
    assert_warnings(
        &r.warnings,
        &[&["PERF_COUNT", "HETERO"], &["BOGUS", "CPU"], &["device NPU is not part of device_type HETERO:GPU.0,CPU"]],
    );
}

#[test]
fn meta_device_streams_and_explicit_precision_go_to_each_device() {
    let r = resolve(&set(&[("device_type", "MULTI:CPU,GPU"), ("precision", "ACCURACY"), ("num_streams", "2")]));
    assert_eq!(
        r.device_properties,
        vec![
            ("CPU".to_owned(), props(&[("EXECUTION_MODE_HINT", "ACCURACY"), ("NUM_STREAMS", "2")])),
            ("GPU".to_owned(), props(&[("EXECUTION_MODE_HINT", "ACCURACY"), ("NUM_STREAMS", "2")])),
        ]
    );
    assert_eq!(
        r.property("DEVICE_PROPERTIES"),
        Some("{CPU:{EXECUTION_MODE_HINT:ACCURACY,NUM_STREAMS:2},GPU:{EXECUTION_MODE_HINT:ACCURACY,NUM_STREAMS:2}}")
    );
    // No CPU in the list: threads are dropped with a warning; empty device entries are never emitted.
    let r = resolve(&set(&[("device_type", "AUTO:GPU,NPU"), ("num_of_threads", "2")]));
    assert_eq!(r.device_properties, vec![("GPU".to_owned(), props(&[("INFERENCE_PRECISION_HINT", "f16")]))]);
    assert_eq!(r.property("DEVICE_PROPERTIES"), Some("{GPU:{INFERENCE_PRECISION_HINT:f16}}"));
    assert!(r.warnings.iter().any(|w| w.contains("num_of_threads")));
    let r = resolve(&set(&[("device_type", "HETERO:GPU,CPU"), ("precision", "DEFAULT")]));
    assert!(r.properties.is_empty() && r.device_properties.is_empty());
}

#[test]
fn bare_auto_uses_available_devices() {
    let o = set(&[("device_type", "AUTO"), ("precision", "FP32")]);
    let r = resolve(&o);
    assert!(r.device_properties.is_empty());
    assert!(r.warnings.iter().any(|w| w.contains("AUTO names no devices")), "{:?}", r.warnings);
    let mut fake = FakeDevices::new();
    fake.available = vec!["CPU".into(), "NPU".into(), "weird".into()];
    let r = o.compile_properties(&fake).unwrap();
    assert_eq!(r.device, "AUTO");
    assert_eq!(
        r.device_properties,
        vec![(
            "CPU".to_owned(),
            props(&[("INFERENCE_PRECISION_HINT", "f32"), ("DYNAMIC_QUANTIZATION_GROUP_SIZE", "0")])
        )]
    );
    // AUTO chose the NPU itself, so FP32 is skipped there rather than fatal.
    assert!(r.warnings.iter().any(|w| w.contains("NPU") && w.contains("FP16")), "{:?}", r.warnings);
}

#[test]
fn raw_properties_are_scoped_and_unchecked() {
    let o = set(&[("device_type", "HETERO:GPU,CPU"), ("precision", "DEFAULT")])
        .property(Some("CPU"), "SOME_KEY", "x")
        .property(Some("HETERO"), "OTHER", "y")
        .property(None, "THIRD", "z")
        .property(Some("NPU"), "IGNORED", "w");
    let r = resolve(&o);
    assert_eq!(r.device_properties, vec![("CPU".to_owned(), props(&[("SOME_KEY", "x")]))]);
    assert_eq!(r.properties, props(&[("OTHER", "y"), ("THIRD", "z"), ("DEVICE_PROPERTIES", "{CPU:{SOME_KEY:x}}")]));
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("IGNORED"));
    let bad = OpenVinoOptions::default().property(Some("FPGA"), "K", "V");
    assert!(matches!(bad.compile_properties(&FakeDevices::new()), Err(OptionError::InvalidDevice { .. })));
}

#[test]
fn device_properties_reject_values_that_break_the_syntax() {
    let o = set(&[("device_type", "HETERO:GPU,CPU"), ("load_config", r#"{"CPU": {"LOG_LEVEL": "LOG_INFO"}}"#)])
        .property(Some("CPU"), "WEIGHTS_PATH", "C:/models/w.bin");
    let e = o.compile_properties(&FakeDevices::new()).unwrap_err();
    assert!(matches!(&e, OptionError::UnrepresentableDeviceProperty { key, .. } if key == "WEIGHTS_PATH"), "{e:?}");
    // The same value on a single device is a plain property.
    let o = OpenVinoOptions::default().property(None, "WEIGHTS_PATH", "C:/models/w.bin");
    assert_eq!(resolve(&o).property("WEIGHTS_PATH"), Some("C:/models/w.bin"));
}

/// Exactly one warning per entry, each containing all of the entry's parts.
fn assert_warnings(warnings: &[String], expected: &[&[&str]]) {
    assert_eq!(warnings.len(), expected.len(), "{warnings:?}");
    for parts in expected {
        assert!(warnings.iter().any(|w| parts.iter().all(|p| w.contains(p))), "{parts:?} not in {warnings:?}");
    }
}

#[test]
fn the_four_remaining_ort_keys_are_parsed_validated_and_mapped_or_refused() {
    // enable_opencl_throttling: GPU_QUEUE_THROTTLE=LOW on a GPU, a warning without one.
    let r = resolve(&set(&[("device_type", "GPU"), ("enable_opencl_throttling", "true")]));
    assert_eq!(r.property("GPU_QUEUE_THROTTLE"), Some("LOW"));
    let r = resolve(&set(&[("enable_opencl_throttling", "1")]));
    assert!(r.property("GPU_QUEUE_THROTTLE").is_none());
    assert!(r.warnings.iter().any(|w| w.contains("enable_opencl_throttling applies only to GPUs")), "{:?}", r.warnings);
    assert!(resolve(&set(&[("enable_opencl_throttling", "false")])).warnings.is_empty());

    // Values are validated when set.
    let mut o = OpenVinoOptions::default();
    for (key, bad) in [("context", "0"), ("context", "0xzz"), ("device_luid", "12345678901234567"), ("device_luid", "")]
    {
        assert!(matches!(o.set(key, bad), Err(OptionError::InvalidValue { .. })), "{key}={bad}");
    }
    assert!(matches!(o.set("enable_causallm", "maybe"), Err(OptionError::InvalidValue { .. })));
    o.set("device_luid", "0x1a2b").unwrap();
    assert_eq!(o.device_luid.as_deref(), Some("0000000000001A2B"));
    o.set("context", "0x7f00aa").unwrap();
    assert_eq!(o.context, Some(0x7f00aa));

    // What cannot be honoured is refused when compiling, naming the option and why.
    for (key, value, why) in [
        ("context", "4096", "remote-context"),
        ("device_luid", "1a2b", "device_type"),
        ("enable_causallm", "true", "MakeStateful"),
    ] {
        let e = set(&[(key, value)]).compile_properties(&FakeDevices::new()).unwrap_err();
        assert!(matches!(e, OptionError::Unsupported { .. }), "{key}: {e:?}");
        let e = e.to_string();
        assert!(e.contains(&format!("`{key}`")) && e.contains(why), "{key}: {e}");
    }
    assert!(set(&[("enable_causallm", "false")]).compile_properties(&FakeDevices::new()).is_ok());
}
