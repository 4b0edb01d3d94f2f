//! A static-shape `[Cpu]` inference in the steady state makes almost no heap allocation:
//! tensor buffers come back from the buffer pool, and kernels keep their bookkeeping inline or
//! per input shape (docs/architecture.md, "Buffers on the Cpu provider").
//!
//! Its own test binary with one test: the counting allocator is process-wide, and another
//! test running at the same time would be counted too.

mod common;

use common::*;
use vinort::{Cpu, Runtime};
use vinort_tools::alloc_count::{self, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Issue 13's bound on the heap allocations of one steady-state static-shape `[Cpu]` run.
const MOST: u64 = 20;

#[test]
fn steady_state_cpu_runs_allocate_at_most_a_few_times() {
    // The int8 forms come from the corpus (scripts/gen-corpus; scripts/test makes it).
    let corpus = std::env::var_os("VINORT_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo().join("tests/data/corpus"));
    assert!(corpus.is_dir(), "{} is missing: run scripts/gen-corpus (scripts/test does)", corpus.display());
    let dirs = ["mobilenetv2_tiny", "bert_tiny", "partition_cnn"]
        .map(model_dir)
        .into_iter()
        .chain(["cnn_qdq_per_channel_u8s8", "bert_dynamic_int8"].map(|n| corpus.join(n)));
    for dir in dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let s = Runtime::load(dir.join("model.onnx")).unwrap().providers([Cpu::default().into()]).build().unwrap();
        let inputs = read_pbs(&dir.join("test_data_set_0"), "input");
        let run = || drop(s.run(inputs.iter().map(|(n, t)| (n.as_str(), t))).unwrap());
        // The first runs fill the buffer pool and the kernels' per-shape caches.
        for _ in 0..3 {
            run();
        }
        let runs = 10;
        let before = alloc_count::snapshot();
        for _ in 0..runs {
            run();
        }
        let per_run = alloc_count::snapshot().since(&before).allocs / runs;
        println!("{name}: {per_run} heap allocations per run");
        assert!(per_run <= MOST, "{name}: {per_run} heap allocations per steady-state run, at most {MOST} wanted");
    }
}
