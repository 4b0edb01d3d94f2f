//! The `ort`-style API: `inputs!` named and positional, ndarray in (borrowed when contiguous)
//! and out (views), session knobs (intra-op threads, optimization level, log level).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ndarray::{Array4, ArrayViewD, Axis};
use vinort::{Cpu, Environment, Error, GraphOptimizationLevel, Input, LogLevel, OpenVino, Positional, Runtime, inputs};

type Named = Vec<(String, vinort::Tensor)>;

/// bert_tiny's two inputs, in model order, from its reference data set, with the outputs.
fn bert() -> (vinort::Session, Named, Named) {
    let s = Runtime::load(model_dir("bert_tiny").join("model.onnx")).unwrap().build().unwrap();
    let data = model_dir("bert_tiny").join("test_data_set_0");
    (s, read_pbs(&data, "input"), read_pbs(&data, "output"))
}

#[test]
fn named_and_positional_inputs_give_the_reference_outputs() {
    let (s, ins, want) = bert();
    let order: Vec<&str> = s.inputs().iter().map(|i| i.name.as_str()).collect();
    let names: Vec<&str> = ins.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, names, "the data set lists the inputs in model order");
    let (a, b) = (&ins[0].1, &ins[1].1);
    // Named, in the reverse order: names decide, not positions.
    let named = s.run(inputs![names[1] => b, names[0].to_string() => a]).unwrap();
    let positional = s.run(inputs![a, b]).unwrap();
    for (i, (name, w)) in want.iter().enumerate() {
        assert_close(name, &named[i], w, 1e-4, 1e-6);
        assert_eq!(named[i].as_tensor().unwrap().as_bytes(), positional[i].as_tensor().unwrap().as_bytes());
    }
    // Swapped positions are the wrong inputs: input_ids gets the mask, which still runs (both
    // int64 ids), so the check is that the outputs differ.
    let swapped = s.run(inputs![b, a]).unwrap();
    assert_ne!(swapped[0].as_tensor().unwrap().as_bytes(), positional[0].as_tensor().unwrap().as_bytes());

    let e = s.run(inputs![a, b, a]).unwrap_err();
    assert!(matches!(&e, Error::Input { name, message } if name == "#2" && message.contains("has 2 input(s)")), "{e}");
    let e = s.run(inputs![a]).unwrap_err().to_string();
    assert!(e.contains(names[1]) && e.contains("missing"), "{e}");
    let e = s.run(inputs![names[0] => a, names[0] => a]).unwrap_err().to_string();
    assert!(e.contains(names[0]) && e.contains("given more than once"), "{e}");
    // `Positional` is what `inputs![a, b]` makes.
    let by_type = s.run(Positional::new([a, b])).unwrap();
    assert_eq!(by_type[0].as_tensor().unwrap().as_bytes(), positional[0].as_tensor().unwrap().as_bytes());
}

#[test]
fn arrays_go_in_borrowed_when_contiguous_and_come_out_as_views() {
    let s = Runtime::load(model_dir("mobilenetv2_tiny").join("model.onnx")).unwrap().build().unwrap();
    let x = Array4::from_shape_fn((1, 3, 64, 64), |(_, c, h, w)| ((c * 4096 + h * 64 + w) as f32 * 0.37).sin());
    let want = s.run([("input", vinort::Tensor::from_array(&x).unwrap())]).unwrap();
    let want = want[0].try_extract_array::<f32>().unwrap().to_owned();

    // Borrowed: the very memory of the array.
    match Input::from(&x) {
        Input::Borrowed(t) => {
            assert_eq!(t.data_ptr(), x.as_ptr().cast());
            assert_eq!(t.shape(), x.shape());
        }
        _ => panic!("a contiguous array must be borrowed"),
    }
    match Input::from(x.view()) {
        Input::Borrowed(t) => assert_eq!(t.data_ptr(), x.as_ptr().cast()),
        _ => panic!("a contiguous view must be borrowed"),
    }
    let out = s.run(inputs!["input" => &x]).unwrap();
    let got: ArrayViewD<f32> = out["probabilities"].try_extract_array().unwrap();
    assert_eq!(got.as_ptr().cast(), out["probabilities"].as_tensor().unwrap().data_ptr());
    assert_eq!(got, want);

    // A non-contiguous view of the same logical values (an NHWC array seen as NCHW) is
    // gathered, and gives the same outputs.
    let nhwc = x.clone().permuted_axes([0, 2, 3, 1]).as_standard_layout().into_owned();
    let as_nchw = nhwc.view().permuted_axes([0, 3, 1, 2]);
    assert!(as_nchw.as_slice().is_none());
    assert!(matches!(Input::from(as_nchw), Input::Value(_)), "a strided view is gathered");
    let out = s.run(inputs![as_nchw]).unwrap();
    assert_eq!(out[0].try_extract_array::<f32>().unwrap(), want);
    // Owned arrays and CowArrays too.
    let out = s.run(inputs![x.clone()]).unwrap();
    assert_eq!(out[0].try_extract_array::<f32>().unwrap(), want);
    let out = s.run(inputs![ndarray::CowArray::from(x.view())]).unwrap();
    assert_eq!(out[0].try_extract_array::<f32>().unwrap(), want);

    // Wrong element type and wrong shape are errors naming the input.
    let e = s.run(inputs!["input" => x.mapv(f64::from)]).unwrap_err().to_string();
    assert!(e.contains("input"), "{e}");
    let e = s.run(inputs!["input" => &x.index_axis(Axis(0), 0)]).unwrap_err().to_string();
    assert!(e.contains("input") && e.contains("rank"), "{e}");
    let (shape, data) = out[0].try_extract_tensor::<f32>().unwrap();
    assert_eq!((shape, data.len()), (&[1usize, 10][..], 10));
    assert!(out[0].try_extract_tensor::<i64>().is_err());
}

#[test]
fn session_knobs_reach_the_cpu_provider() {
    let path = model_dir("bert_tiny").join("model.onnx");
    let kernels = |s: &vinort::Session| s.plan().partitions[0].details.clone();
    let all = Runtime::load(&path).unwrap().build().unwrap();
    let off = Runtime::load(&path).unwrap().optimization_level(GraphOptimizationLevel::Disabled).build().unwrap();
    let nodes = off.plan().partitions[0].nodes.len();
    assert!(kernels(&off).contains(&format!("{nodes} kernels")), "{}", kernels(&off));
    assert!(!kernels(&all).contains(&format!("{nodes} kernels")), "All fuses nodes: {}", kernels(&all));
    // The builder's level overrides the provider's own.
    let over = Runtime::load(&path)
        .unwrap()
        .providers([Cpu::default().optimization(GraphOptimizationLevel::All).into()])
        .optimization_level(GraphOptimizationLevel::Disabled)
        .build()
        .unwrap();
    assert_eq!(kernels(&over), kernels(&off));

    // Threads are part of what makes two sessions the same: an environment shares only equal ones.
    let env = Environment::new();
    let two = env.load(&path).unwrap().intra_threads(2).build().unwrap();
    let again = env.load(&path).unwrap().intra_threads(2).build().unwrap();
    let one = env.load(&path).unwrap().intra_threads(1).build().unwrap();
    assert!(two.shares_with(&again));
    assert!(!two.shares_with(&one));
}

/// Counts the events vinort's session code emits, by level.
struct Counter(Arc<[AtomicUsize; 5]>);

impl tracing::Subscriber for Counter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        if e.metadata().target().starts_with("vinort::") {
            let i = match *e.metadata().level() {
                tracing::Level::ERROR => 0,
                tracing::Level::WARN => 1,
                tracing::Level::INFO => 2,
                tracing::Level::DEBUG => 3,
                tracing::Level::TRACE => 4,
            };
            self.0[i].fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn events_of(level: Option<LogLevel>) -> [usize; 5] {
    let counts = Arc::new([(); 5].map(|_| AtomicUsize::new(0)));
    let path = model_dir("mobilenetv2_tiny").join("model.onnx");
    tracing::subscriber::with_default(Counter(counts.clone()), || {
        // An OpenVINO that cannot start (this machine has no GPU) is skipped with a warning.
        let gpu = OpenVino::from_key_values([("device_type", "GPU")]).unwrap();
        let mut b = Runtime::load(&path).unwrap().providers([gpu.into(), Cpu::default().into()]);
        if let Some(l) = level {
            b = b.log_level(l);
        }
        b.build().unwrap();
    });
    counts.each_ref().map(|c| c.load(Ordering::Relaxed))
}

#[test]
fn the_log_level_bounds_what_a_session_logs() {
    // tracing caches each call site's interest when the site is first reached; a test on
    // another thread reaching it while this one installs its subscriber can leave it cached
    // as "never". One build first registers every site; each later subscriber then rebuilds
    // the cache with every site known.
    events_of(None);
    let all = events_of(None);
    assert!(all[1] >= 1 && all[2] >= 1, "a skipped provider warns and the plan is logged: {all:?}");
    let warnings = events_of(Some(LogLevel::Warning));
    assert_eq!((warnings[1], warnings[2]), (all[1], 0), "{warnings:?}");
    let errors = events_of(Some(LogLevel::Error));
    assert_eq!(errors[1..], [0, 0, 0, 0], "{errors:?}");
}
