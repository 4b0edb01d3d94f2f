//! `Session::run_async` from a tokio runtime: several runs in flight on one shared session,
//! awaited together, each checked against a plain `Session::run` of the same inputs; then a
//! run given a deadline it cannot meet ends with `Error::Cancelled` instead of blocking the
//! task.
//!
//! ```text
//! cargo run --release -p vinort --example tokio_async -- [MODEL_DIR] [openvino|cpu]
//! ```
//!
//! `MODEL_DIR` holds `model.onnx` and `test_data_set_0/input_K.pb` (default:
//! models/mobilenetv2_tiny). The runs happen on vinort's own threads (one per call), so the
//! tokio workers stay free while they compute.

use std::path::PathBuf;
use std::time::Duration;

use vinort::openvino::Precision;
use vinort::{Cpu, Error, OpenVino, Provider, RunOptions, Runtime, Tensor};

fn providers(which: &str) -> Vec<Provider> {
    match which {
        "cpu" => vec![Cpu::default().into()],
        _ => vec![OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()],
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).map_or_else(|| PathBuf::from("models/mobilenetv2_tiny"), PathBuf::from);
    let which = args.get(2).map_or("cpu", String::as_str);
    let session = Runtime::load(dir.join("model.onnx"))?.providers(providers(which)).build()?;
    let inputs: Vec<(String, Tensor)> = vinort_tools::testcase::read_tensors(&dir.join("test_data_set_0"), "input")?;
    let want = session.run(inputs.iter().map(|(n, t)| (n.as_str(), t)))?;

    // Eight runs in flight at once, awaited together.
    let runs: Vec<_> = (0..8)
        .map(|_| session.run_async(inputs.iter().map(|(n, t)| (n.clone(), t.clone())), RunOptions::new()))
        .collect();
    let started = std::time::Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for run in runs {
        set.spawn(run);
    }
    let mut done = 0;
    while let Some(joined) = set.join_next().await {
        let got = joined??;
        for (name, w) in want.iter() {
            let (w, g) = (w.as_tensor()?, got[name].as_tensor()?);
            if w.as_slice::<f32>()? != g.as_slice::<f32>()? {
                return Err(format!("output {name} of an async run differs from the plain run").into());
            }
        }
        done += 1;
    }
    println!(
        "{done} concurrent runs awaited in {:.1} ms, outputs identical to Session::run",
        started.elapsed().as_secs_f64() * 1e3
    );

    // A deadline already past: the run stops before its first step, as a typed error.
    let late = RunOptions::new().with_timeout(Duration::ZERO).with_tag("late");
    match session.run_async(inputs.iter().map(|(n, t)| (n.clone(), t.clone())), late).await {
        Err(Error::Cancelled { reason, tag }) => {
            println!("a run past its deadline: cancelled ({reason:?}, tag {tag:?})")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("a run with a zero deadline completed".into()),
    }
    Ok(())
}
