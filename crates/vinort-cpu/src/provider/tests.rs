//! The Cpu provider's placement of runs, pools and keepers.

use super::*;

/// A plan goes to the caller's thread only after a hosted run measured short, stays there
/// while that is faster (re-measuring hosting every REMEASURE_EVERY runs), and goes back
/// when hosting measured faster or the runs grew long for KEPT runs; one slow run moves
/// nothing.
#[test]
fn short_plans_run_where_they_measured_faster() {
    use std::time::Duration;
    let p = Placement::default();
    assert!(!p.inline(), "the first run is hosted");
    p.record(false, Duration::from_micros(40));
    assert!(p.inline(), "a short hosted run is followed by one inline, to measure it");
    p.record(true, Duration::from_micros(5));
    let inline_runs = (0..REMEASURE_EVERY * 2).filter(|_| p.inline()).count() as u64;
    assert_eq!(inline_runs, REMEASURE_EVERY * 2 - 2, "inline, with hosting re-measured every {REMEASURE_EVERY} runs");
    p.record(true, Duration::from_micros(60));
    assert_eq!(p.inline.estimate(), 5_000, "one slow inline run (a neighbour's noise) moves nothing");
    for _ in 1..KEPT {
        p.record(true, Duration::from_micros(60));
    }
    assert!(
        (0..REMEASURE_EVERY - 1).all(|_| !p.inline()) && p.inline(),
        "hosted once it is faster over the kept runs, inline re-measured"
    );
    p.record(false, Duration::from_millis(1));
    assert_eq!(p.hosted.estimate(), 40_000, "one long hosted run moves nothing");
    for _ in 1..KEPT {
        p.record(false, Duration::from_millis(1));
    }
    assert!((0..REMEASURE_EVERY * 2).all(|_| !p.inline()), "long runs are always hosted");
}

/// A kernel that records what `look` sees from inside a run, and returns a scalar.
struct Probe<T, F>(Arc<std::sync::Mutex<Vec<T>>>, F);

impl<T: Send, F: Fn() -> T + Send + Sync> Kernel for Probe<T, F> {
    fn run(&self, _: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let seen = (self.1)();
        if let Ok(mut all) = self.0.lock() {
            all.push(seen);
        }
        Ok(smallvec::smallvec![Value::Tensor(Tensor::scalar(1f32))])
    }
}

/// A one-kernel partition on a pool of `threads` running `look` inside each run, and what the
/// runs saw.
fn probe<T: Send + 'static>(
    threads: usize,
    sleep_between_kernels: bool,
    look: impl Fn() -> T + Send + Sync + 'static,
) -> (CpuPartition, Arc<std::sync::Mutex<Vec<T>>>) {
    let seen = Arc::new(std::sync::Mutex::new(vec![]));
    let mut b = PlanBuilder::<ValueId, KernelStep>::new();
    let step = KernelStep { kernel: Box::new(Probe(seen.clone(), look)), node: "probe".into(), op: "Probe".into() };
    b.step(step, &[], &[Some(ValueId(0))]).unwrap_or_else(|e| panic!("{e}"));
    b.output(ValueId(0)).unwrap_or_else(|e| panic!("{e}"));
    let pool = Some(pool_of(threads).unwrap_or_else(|e| panic!("{e}")));
    (CpuPartition { plan: b.build(), pool, placement: Placement::default(), sleep_between_kernels }, seen)
}

/// A partition asked for one thread runs on the caller's thread with kernels kept on it
/// (`par::serial`); one of two threads hands its first run to its pool, and a run it
/// measures on the caller's thread keeps its kernels there too.
#[test]
fn one_thread_partitions_run_on_the_callers_thread() {
    for threads in [1, 2] {
        let (part, seen) = probe(threads, false, || (std::thread::current().id(), crate::par::serial()));
        for i in 0..3 {
            part.run(&[], &RunContext::default()).unwrap_or_else(|e| panic!("{e}"));
            if i == 0 {
                // However long a new pool's first hand-off took on a busy machine, say it
                // was short: the next run is then measured on the caller's thread.
                part.placement.record(false, std::time::Duration::from_micros(10));
            }
        }
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        let here = std::thread::current().id();
        assert_eq!(seen.len(), 3);
        if threads == 1 {
            assert!(seen.iter().all(|(t, serial)| *t == here && *serial), "{seen:?}");
        } else {
            // The first run is hosted on the pool, not serial; a later short one measured
            // inline runs on this thread, serial.
            assert!(seen[0].0 != here && !seen[0].1, "{seen:?}");
            assert!(seen[1].0 == here, "a short plan is measured inline: {seen:?}");
            assert!(seen.iter().all(|(t, serial)| (*t == here) == *serial), "{seen:?}");
        }
    }
    assert!(!crate::par::serial(), "the mark ends with the run");
}

/// A hosted run keeps the pool's other workers polling (they run the kernels' jobs as
/// keepers) unless the provider says they sleep between kernels.
#[test]
fn sleep_between_kernels_runs_without_keepers() {
    // A pool no other test uses: one plan hosted at a time.
    let threads = 3;
    for sleep in [false, true] {
        let (part, seen) =
            probe(threads, sleep, || rayon::broadcast(|_| crate::par::in_keeper()).into_iter().filter(|k| *k).count());
        // A new partition's first run is hosted.
        part.run(&[], &RunContext::default()).unwrap_or_else(|e| panic!("{e}"));
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        let want = if sleep { 0 } else { threads - 1 };
        assert_eq!(seen, [want], "sleep_between_kernels={sleep}: keepers seen by the plan's kernel");
    }
}

#[test]
fn a_pool_hosts_one_plan_and_a_panic_releases_it() {
    let flag = AtomicBool::new(false);
    let first = Host::claim(&flag).expect("a free pool can be claimed");
    assert!(Host::claim(&flag).is_none(), "a second plan must not be hosted while one is");
    drop(first);
    assert!(Host::claim(&flag).is_some(), "dropping the claim frees the pool");
    let unwound = std::panic::catch_unwind(|| {
        let _host = Host::claim(&flag).expect("free");
        panic!("kernel failed");
    });
    assert!(unwound.is_err());
    assert!(!flag.load(Ordering::Acquire), "a panicking plan must not keep the pool claimed");
}

#[test]
fn kernel_pool_is_restored_after_a_partition() {
    let pool = pool_of(1).expect("one thread");
    assert!(KERNEL_POOL.with_borrow(Option::is_none));
    {
        let _outer = KernelPool::set(&pool);
        {
            let _inner = KernelPool::set(&pool);
        }
        assert!(KERNEL_POOL.with_borrow(Option::is_some), "leaving a nested partition keeps the outer's pool");
    }
    assert!(KERNEL_POOL.with_borrow(Option::is_none), "leaving the partition clears it");
}

/// An If branch whose weights are a Constant of the enclosing graph, sliced and
/// concatenated in the branch (PyTorch's LSTM gate reordering in silero-vad): compiled in a
/// partition that optimizes, the branch folds that work into one constant, reads no outer
/// value at run time, and gives the same outputs as the branch run as written.
#[test]
fn branches_fold_what_they_compute_from_outer_constants() {
    use vinort_ir::proto::build::{self, attr, fixed_tensor_info, node};
    use vinort_ir::proto::prost::Message;
    let w: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    let mut weights = node("Constant", "w", &[], &["w"]);
    weights.attribute.push(attr::floats("value_floats", &w));
    let consts = [("s0", 0i64), ("s6", 6), ("s12", 12)].map(|(name, v)| {
        let mut c = node("Constant", name, &[], &[name]);
        c.attribute.push(attr::ints("value_ints", &[v]));
        c
    });
    // then: x * concat(w[6..12], w[0..6]); else: x.
    let then_branch = vinort_ir::proto::onnx::GraphProto {
        name: Some("then".into()),
        node: vec![
            node("Slice", "hi", &["w", "s6", "s12"], &["hi"]),
            node("Slice", "lo", &["w", "s0", "s6"], &["lo"]),
            {
                let mut c = node("Concat", "cat", &["hi", "lo"], &["wr"]);
                c.attribute.push(attr::int("axis", 0));
                c
            },
            node("Mul", "mul", &["x", "wr"], &["then_y"]),
        ],
        output: vec![fixed_tensor_info("then_y", 1, &[12])],
        ..Default::default()
    };
    let else_branch = vinort_ir::proto::onnx::GraphProto {
        name: Some("else".into()),
        node: vec![node("Identity", "id", &["x"], &["else_y"])],
        output: vec![fixed_tensor_info("else_y", 1, &[12])],
        ..Default::default()
    };
    let mut branch = node("If", "if", &["c"], &["y"]);
    branch.attribute.push(attr::graph("then_branch", then_branch));
    branch.attribute.push(attr::graph("else_branch", else_branch));
    let mut nodes = vec![weights];
    nodes.extend(consts);
    nodes.push(branch);
    let g = vinort_ir::proto::onnx::GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: vec![fixed_tensor_info("x", 1, &[12]), fixed_tensor_info("c", 9, &[])],
        output: vec![fixed_tensor_info("y", 1, &[12])],
        ..Default::default()
    };
    let model = Model::from_bytes(build::model(9, &[("", 17)], g).encode_to_vec()).unwrap_or_else(|e| panic!("{e}"));
    let graph = &model.graph;
    let x: Vec<f32> = (0..12).map(|i| 1.0 + i as f32).collect();
    let want: Vec<f32> = (0..12).map(|i| x[i] * w[(i + 6) % 12]).collect();
    let inputs = [
        Value::Tensor(Tensor::from_vec(&[12], x.clone()).unwrap_or_else(|e| panic!("{e}"))),
        Value::Tensor(Tensor::scalar(true)),
    ];
    let refs: Vec<&Value> = inputs.iter().collect();
    for level in [OptLevel::Disabled, OptLevel::All] {
        let plan = compile_nodes(graph, graph.topo_order(), graph.inputs(), graph.outputs(), level)
            .unwrap_or_else(|e| panic!("{e}"));
        let out = plan.run(&refs, &RunContext::default()).unwrap_or_else(|e| panic!("{level:?}: {e}"));
        let got = out[0].as_tensor().and_then(|t| t.to_vec::<f32>()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, want, "{level:?}");
    }
    // The branch itself, compiled as the If kernel compiles it with `w` known or not.
    let if_node = graph
        .topo_order()
        .iter()
        .map(|n| graph.node(*n))
        .find(|n| n.op_type == "If")
        .unwrap_or_else(|| panic!("no If"));
    let then_g = if_node.req_attr::<Arc<Graph>>("then_branch").unwrap_or_else(|e| panic!("{e}"));
    let known = |name: &str| match name {
        "w" => Tensor::from_vec(&[12], w.clone()).ok(),
        "s0" => Some(Tensor::from_vec(&[1], vec![0i64]).ok()?),
        "s6" => Some(Tensor::from_vec(&[1], vec![6i64]).ok()?),
        "s12" => Some(Tensor::from_vec(&[1], vec![12i64]).ok()?),
        _ => None,
    };
    let as_written = SubgraphPlan::compile(&then_g, OptLevel::Disabled, |_| None).unwrap_or_else(|e| panic!("{e}"));
    let folded = SubgraphPlan::compile(&then_g, OptLevel::Extended, known).unwrap_or_else(|e| panic!("{e}"));
    assert!(as_written.outer_names.contains(&"w".to_string()), "{:?}", as_written.outer_names);
    assert_eq!(folded.outer_names, ["x"], "only x is read at run time");
    assert_eq!(as_written.plan.steps().count(), 4);
    assert_eq!(folded.plan.steps().count(), 1, "the slices and the concat fold into a constant");
}
