//! What `vinort perf` prints: the summary, or one JSON object (`--json`).

use std::path::Path;

use serde::Serialize;
use vinort::Session;
use vinort_tools::json::{self, ordered, rounded, rounded_opt};
use vinort_tools::providers::ProviderList;
use vinort_tools::stats::Latency;

use super::measure::Measured;
use super::{Mode, PerfArgs};

pub(super) struct Report<'a> {
    pub a: &'a PerfArgs,
    pub model: &'a Path,
    pub session: &'a Session,
    pub sources: &'a [(String, String)],
    pub notes: &'a [String],
    pub creation_ms: f64,
    pub first_ms: f64,
}

/// Per-inference averages of the measured phase, in the order and under the names of the JSON.
#[derive(Serialize)]
struct PerRun {
    #[serde(rename = "heap_allocations", serialize_with = "rounded")]
    heap_allocs: f64,
    #[serde(serialize_with = "rounded")]
    heap_bytes: f64,
    #[serde(serialize_with = "rounded")]
    tensor_buffers: f64,
    #[serde(serialize_with = "rounded")]
    tensor_buffer_bytes: f64,
    #[serde(serialize_with = "rounded")]
    tensor_copies: f64,
    #[serde(serialize_with = "rounded")]
    tensor_copy_bytes: f64,
    #[serde(rename = "tensor_buffers_reused", serialize_with = "rounded")]
    tensor_reuses: f64,
}

impl PerRun {
    fn of(m: &Measured) -> PerRun {
        let n = m.latencies.len() as f64;
        PerRun {
            heap_allocs: m.heap.allocs as f64 / n,
            heap_bytes: m.heap.bytes as f64 / n,
            tensor_buffers: m.tensors.tensor_allocs as f64 / n,
            tensor_buffer_bytes: m.tensors.tensor_alloc_bytes as f64 / n,
            tensor_copies: m.tensors.tensor_copies as f64 / n,
            tensor_copy_bytes: m.tensors.tensor_copy_bytes as f64 / n,
            tensor_reuses: m.tensors.tensor_reuses as f64 / n,
        }
    }
}

fn throughput(m: &Measured) -> f64 {
    if m.wall_s > 0.0 { m.latencies.len() as f64 / m.wall_s } else { f64::NAN }
}

/// The `--json` object, field by field in the order printed.
#[derive(Serialize)]
struct PerfJson<'a> {
    model: String,
    providers: Vec<&'a str>,
    #[serde(serialize_with = "ordered")]
    options: Vec<(&'a str, &'a str)>,
    strict: bool,
    mode: &'static str,
    runs: usize,
    #[serde(serialize_with = "rounded_opt")]
    duration_s: Option<f64>,
    concurrency: usize,
    warmup_per_thread: usize,
    partitions: Vec<PartitionJson<'a>>,
    warnings: &'a [String],
    inputs: Vec<InputJson<'a>>,
    notes: &'a [String],
    #[serde(serialize_with = "rounded")]
    session_creation_ms: f64,
    #[serde(serialize_with = "rounded")]
    first_inference_ms: f64,
    latency_ms: Latency,
    #[serde(serialize_with = "rounded")]
    wall_time_ms: f64,
    #[serde(serialize_with = "rounded")]
    throughput_per_s: f64,
    #[serde(serialize_with = "rounded_opt")]
    peak_memory_mib: Option<f64>,
    per_inference: PerRun,
}

#[derive(Serialize)]
struct PartitionJson<'a> {
    provider: &'a str,
    nodes: usize,
}

#[derive(Serialize)]
struct InputJson<'a> {
    name: &'a str,
    source: &'a str,
}

impl Report<'_> {
    pub fn human(&self, m: &Measured, peak: Option<f64>) {
        let a = self.a;
        let l = Latency::of(&m.latencies);
        let per = PerRun::of(m);
        println!("warm-up: {} run(s) per thread", a.warmup);
        let wall = if m.wall_s >= 1.0 { format!("{:.3} s", m.wall_s) } else { format!("{:.1} ms", m.wall_s * 1e3) };
        println!(
            "measured: {} run(s) in {wall} ({} mode, {} thread(s))",
            m.latencies.len(),
            a.mode.name(),
            a.concurrent
        );
        println!(
            "latency (ms): min {:.3} median {:.3} p90 {:.3} p99 {:.3} max {:.3} mean {:.3}",
            l.min, l.median, l.p90, l.p99, l.max, l.mean
        );
        println!("throughput: {:.1} inferences/s", throughput(m));
        match peak {
            Some(mib) => println!("peak memory: {mib:.1} MiB"),
            None => println!("peak memory: unavailable"),
        }
        println!(
            "per inference: {:.1} heap allocations ({:.0} bytes), {:.1} tensor buffers allocated ({:.0} bytes), {:.1} reused from the buffer pool, {:.1} tensor copies ({:.0} bytes)",
            per.heap_allocs,
            per.heap_bytes,
            per.tensor_buffers,
            per.tensor_buffer_bytes,
            per.tensor_reuses,
            per.tensor_copies,
            per.tensor_copy_bytes
        );
        if self.session.plan().partitions.iter().any(|p| p.provider.starts_with("OpenVino")) {
            println!("note: heap allocations count Rust allocations only, not OpenVINO's own");
        }
    }

    pub fn json(&self, m: &Measured, peak: Option<f64>) -> String {
        let a = self.a;
        let plan = self.session.plan();
        // Both already validated: the session was built from them.
        let list = a.providers.providers.parse::<ProviderList>().ok();
        let options =
            a.providers.options.split_whitespace().filter_map(|t| t.split_once('|')).collect::<Vec<(&str, &str)>>();
        json::to_line(&PerfJson {
            model: self.model.display().to_string(),
            providers: list.as_ref().map(ProviderList::names).unwrap_or_default(),
            options,
            strict: a.providers.strict,
            mode: a.mode.name(),
            runs: m.latencies.len(),
            duration_s: (a.mode == Mode::Duration).then_some(a.seconds),
            concurrency: a.concurrent,
            warmup_per_thread: a.warmup,
            partitions: plan
                .partitions
                .iter()
                .map(|p| PartitionJson { provider: &p.provider, nodes: p.nodes.len() })
                .collect(),
            warnings: &plan.warnings,
            inputs: self.sources.iter().map(|(name, source)| InputJson { name, source }).collect(),
            notes: self.notes,
            session_creation_ms: self.creation_ms,
            first_inference_ms: self.first_ms,
            latency_ms: Latency::of(&m.latencies),
            wall_time_ms: m.wall_s * 1e3,
            throughput_per_s: throughput(m),
            peak_memory_mib: peak,
            per_inference: PerRun::of(m),
        })
    }
}
