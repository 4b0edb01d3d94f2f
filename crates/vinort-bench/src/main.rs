//! `vinort-bench`: vinort side by side with ONNX Runtime (CPU EP, OpenVINO EP) and native
//! OpenVINO, on the same models, inputs and thread counts, one process per runtime.
//!
//! * `vinort-bench measure --runtime R MODEL_DIR` measures one runtime on one model in this
//!   process and prints one JSON line: session creation, first inference, the latencies.
//! * `vinort-bench table MODEL_DIR...` runs `measure` as a child process for every model and
//!   runtime (each ONNX Runtime build is a different shared library, and one process can load
//!   only one), then writes the tables with ratios to `docs/performance.md` (or `--out`).
//!
//! * `vinort-bench soak` / `vinort-bench stress` are the long-run measurements of
//!   docs/reliability.md: RSS over a thousand sessions and a hundred thousand inferences, and
//!   threads sharing sessions checked against single-threaded outputs (see [`soak`]).
//!
//! The ONNX Runtime columns need `--features anchors` and the wheels of `scripts/py-env` and
//! `scripts/py-env --ovep`; `scripts/perf-table` does all of it.

mod anchors;
mod measure;
mod report;
mod soak;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

pub use measure::Measurement;

// Counts heap allocations, for the per-inference counts of vinort's runs.
#[global_allocator]
static ALLOCATOR: vinort_tools::alloc_count::Counting = vinort_tools::alloc_count::Counting;

/// Every runtime the harness knows, by the name used on the command line and in the tables.
pub const RUNTIMES: &[(&str, &str)] = &[
    ("vinort-ov-f32", "vinort [OpenVino(CPU, FP32), Cpu]"),
    ("vinort-ov", "vinort [OpenVino(CPU, default precision), Cpu]"),
    ("vinort-cpu", "vinort [Cpu]"),
    ("openvino-f32", "OpenVINO 2026.4 native, f32"),
    ("openvino", "OpenVINO 2026.4 native, default precision"),
    ("ort-cpu", "ONNX Runtime 1.31 CPU EP"),
    ("ort-ovep", "ONNX Runtime 1.24 + OpenVINO EP (CPU)"),
];

#[derive(Parser)]
#[command(name = "vinort-bench", about = "vinort against ONNX Runtime and native OpenVINO, side by side")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure one runtime on one model (a folder with model.onnx and test_data_set_0) in this process.
    Measure {
        /// One of: vinort-ov-f32, vinort-ov, vinort-cpu, openvino-f32, openvino, ort-cpu, ort-ovep.
        #[arg(long)]
        runtime: String,
        #[command(flatten)]
        timing: Timing,
        /// Also create a second session with this model cache folder warm (vinort-ov*, openvino*,
        /// ort-ovep): the first session fills it, the second is timed.
        #[arg(long)]
        cache_dir: Option<PathBuf>,
        model: PathBuf,
    },
    /// vinort [OpenVino(CPU), Cpu] against native OpenVINO in this process, run by run
    /// alternating, at one precision; prints one JSON line with both latency lists.
    Pair {
        /// `f32` (INFERENCE_PRECISION_HINT=f32 and DYNAMIC_QUANTIZATION_GROUP_SIZE=0 on both, what
        /// vinort's precision FP32 sets) or `default` (OpenVINO's own choice).
        #[arg(long, default_value = "f32")]
        precision: String,
        /// Pairs of measured runs after warm-up.
        #[arg(long, default_value_t = 200)]
        runs: usize,
        #[arg(long, default_value_t = 10)]
        warmup: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        model: PathBuf,
    },
    /// Measure every runtime on every model, one child process each, and write the tables.
    Table {
        #[command(flatten)]
        timing: Timing,
        /// Alternating vinort/native OpenVINO pairs per precision and whole-compiled model
        /// (`vinort-bench pair`; 0 skips them).
        #[arg(long, default_value_t = 200)]
        pairs: usize,
        /// Alternating vinort/native OpenVINO session creations, one fresh process each, per
        /// precision and whole-compiled model (0 skips them).
        #[arg(long, default_value_t = 10)]
        session_pairs: usize,
        /// Interleaved rounds per model: every runtime once per round, pooled afterwards.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Runtimes to include (comma list; default all).
        #[arg(long)]
        runtimes: Option<String>,
        /// Where to write the markdown (default: print only).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The command that produced the models and this table, recorded in the document.
        #[arg(long, default_value = "scripts/perf-table")]
        command: String,
        models: Vec<PathBuf>,
    },
    /// Build and drop sessions, then run inferences, sampling resident memory (both provider
    /// lists, every model in turn).
    Soak {
        /// Provider lists (`;`-separated; default `cpu;openvino,cpu`).
        #[arg(long, default_value = "cpu;openvino,cpu")]
        lists: String,
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
        #[arg(long, default_value_t = 100_000)]
        inferences: usize,
        models: Vec<PathBuf>,
    },
    /// Threads sharing one session per model and provider list, on input variants, each
    /// output checked against a single-threaded run; resident memory sampled every second.
    Stress {
        /// Provider lists (`;`-separated; default `cpu;openvino,cpu`).
        #[arg(long, default_value = "cpu;openvino,cpu")]
        lists: String,
        #[arg(long, default_value_t = 8)]
        threads: usize,
        #[arg(long, default_value_t = 180)]
        seconds: u64,
        /// Input variants per session (other values; odd ones also longer symbolic dims).
        #[arg(long, default_value_t = 4)]
        variants: usize,
        models: Vec<PathBuf>,
    },
}

/// How each runtime is measured, for `measure` and `table`.
#[derive(clap::Args)]
struct Timing {
    /// Measured runs after warm-up.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Warm-up runs.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Threads for every runtime (intra-op threads, INFERENCE_NUM_THREADS, rayon).
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Measure { runtime, timing: Timing { runs, warmup, threads }, cache_dir, model } => {
            if !RUNTIMES.iter().any(|(n, _)| *n == runtime) {
                bail!("unknown runtime '{runtime}'; known: {}", names().join(", "));
            }
            if runs == 0 {
                bail!("--runs must be at least 1");
            }
            let m = measure::measure(
                &runtime,
                &model,
                measure::Plan { runs, warmup, threads, cache_dir: cache_dir.as_deref() },
            )
            .with_context(|| format!("{runtime} on {}", model.display()))?;
            println!("{}", m.to_json());
            Ok(())
        }
        Command::Pair { precision, runs, warmup, threads, model } => {
            let f32_precision = match precision.as_str() {
                "f32" => true,
                "default" => false,
                other => bail!("--precision must be f32 or default, not '{other}'"),
            };
            if runs == 0 {
                bail!("--runs must be at least 1");
            }
            let p = measure::paired(f32_precision, &model, runs, warmup, threads)
                .with_context(|| format!("pair ({precision}) on {}", model.display()))?;
            println!("{}", p.to_json());
            Ok(())
        }
        Command::Table {
            timing: Timing { runs, warmup, threads },
            pairs,
            session_pairs,
            rounds,
            runtimes,
            out,
            command,
            models,
        } => {
            if models.is_empty() {
                bail!("give at least one model folder");
            }
            if runs == 0 || rounds == 0 {
                bail!("--runs and --rounds must be at least 1");
            }
            let wanted: Vec<String> = match runtimes {
                Some(list) => list.split(',').map(|s| s.trim().to_owned()).collect(),
                None => names().into_iter().map(str::to_owned).collect(),
            };
            for w in &wanted {
                if !RUNTIMES.iter().any(|(n, _)| n == w) {
                    bail!("unknown runtime '{w}'; known: {}", names().join(", "));
                }
            }
            let doc = report::table(&models, &wanted, runs, warmup, threads, rounds, pairs, session_pairs, &command)?;
            match out {
                Some(path) => {
                    std::fs::write(&path, &doc).with_context(|| format!("writing {}", path.display()))?;
                    eprintln!("wrote {}", path.display());
                }
                None => print!("{doc}"),
            }
            Ok(())
        }
        Command::Soak { lists, sessions, inferences, models } => {
            soak::soak(&models, &soak::lists(&lists)?, sessions, inferences)
        }
        Command::Stress { lists, threads, seconds, variants, models } => {
            soak::stress(&models, &soak::lists(&lists)?, threads, seconds, variants)
        }
    }
}

fn names() -> Vec<&'static str> {
    RUNTIMES.iter().map(|(n, _)| *n).collect()
}
