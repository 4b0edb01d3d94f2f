//! Measures what a second session of one model costs in resident memory, built alone and
//! through an `Environment` that shares the first one's compiled form.
//!
//! ```text
//! cargo run --release -p vinort --example shared_sessions -- MODEL.onnx [openvino|cpu]
//! ```

use vinort::openvino::Precision;
use vinort::{Cpu, Environment, OpenVino, Provider, Runtime};

/// Resident set size in MiB, from /proc/self/statm (Linux).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

fn providers(which: &str) -> Vec<Provider> {
    match which {
        "cpu" => vec![Cpu::default().into()],
        _ => vec![OpenVino::cpu().precision(Precision::Fp32).error_on_failure(), Cpu::default().into()],
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let model = args.get(1).ok_or("usage: shared_sessions MODEL.onnx [openvino|cpu]")?;
    let which = args.get(2).map_or("openvino", String::as_str);
    let base = rss_mib();
    let env = Environment::new();
    let first = env.load(model)?.providers(providers(which)).build()?;
    let after_first = rss_mib();
    let second = env.load(model)?.providers(providers(which)).build()?;
    let after_second = rss_mib();
    let alone = Runtime::load(model)?.providers(providers(which)).build()?;
    let after_alone = rss_mib();
    let (a, b, c) = (after_first - base, after_second - after_first, after_alone - after_second);
    println!(
        "{which}: first session +{a:.1} MiB; second through the environment +{b:.1} MiB ({:.1}% of the first, shared: {}); a third built alone +{c:.1} MiB",
        100.0 * b / a,
        first.shares_with(&second)
    );
    drop((first, second, alone));
    Ok(())
}
