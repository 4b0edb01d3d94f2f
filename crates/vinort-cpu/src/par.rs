//! When a kernel hands its work to rayon: one threshold per kind of work.
//!
//! A rayon hand-off costs a few microseconds (waking a worker, stealing, joining), about the time
//! of 10⁴–10⁵ cheap flops, so a kernel stays on the calling thread until its work is a few times
//! that. The values are the ones each family was written and tuned with (kept unchanged when
//! they were gathered here, so no kernel changed speed); they differ by the cost of one unit of
//! work, which is what each constant's name says it counts. Re-measure with the criterion
//! benches in `benches/` before changing one.

// Families move onto these one by one (issue 10); until the last has, some have no caller.
#![allow(dead_code)]

/// Output elements of a cheap per-element map (elementwise arithmetic, Cast, Where): a unit
/// is a load, one or two flops and a store, so it takes the most units to pay for a hand-off.
pub(crate) const ELEMENTWISE: usize = 1 << 16;

/// Output elements per rayon task once an elementwise map is split ([`ELEMENTWISE`]): large
/// enough to amortise the task, small enough to balance over the pool.
pub(crate) const ELEMENTWISE_CHUNK: usize = 1 << 14;

/// Elements touched by kernels doing a handful of flops per element: reductions,
/// normalisations, softmax, resampling (output elements × taps), quantization, DeformConv's
/// column sampling.
pub(crate) const ELEMENTS: usize = 1 << 15;

/// Elements of work each rayon task gets at least when [`ELEMENTS`] is exceeded.
pub(crate) const GRAIN: usize = 1 << 13;

/// Multiply-adds of a matrix product (or of one recurrent direction): each is one fused flop,
/// but the operands stream through cache, so the bar sits with [`ELEMENTWISE`].
pub(crate) const MACS: usize = 1 << 16;

/// Row × tree visits of a tree ensemble: one visit walks a whole root-to-leaf path (a dozen
/// dependent loads and compares), so fewer of them pay for a hand-off.
pub(crate) const TREE_VISITS: usize = 1 << 14;

thread_local! {
    /// Set while this thread runs a one-thread partition's plan itself (see [`Serial`]).
    static SERIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set while this thread hosts a plan whose pool's other workers are kept polling
    /// ([`with_warm_workers`]).
    static HOSTING_WARM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True on a thread whose pool's other workers are polling for its jobs right now (it hosts a
/// plan under [`with_warm_workers`], or it is one of the keepers): a split then costs a push
/// and a steal, no wake-up, and pays for far less work than the thresholds here assume.
pub(crate) fn warm() -> bool {
    !serial() && (HOSTING_WARM.get() || KEEPING.get())
}

/// True while the calling thread runs the plan of a partition asked to use one thread, on its
/// own: kernels then keep their work on this thread instead of handing parts to rayon, whose
/// pool here is the process-wide one (the partition's own pool has only this run's one
/// thread's worth of work to give). Checked by the shared loops every small-model kernel goes
/// through (products, convolutions, elementwise maps, normalisations, reductions, recurrent
/// directions); a kernel that does not check still computes the same values, on more threads.
pub(crate) fn serial() -> bool {
    SERIAL.get()
}

/// True when work of `units` (of the kind `threshold` counts) goes to rayon: it reaches the
/// threshold and this thread is not running a one-thread plan ([`serial`]).
pub(crate) fn worth(units: usize, threshold: usize) -> bool {
    units >= threshold && !serial()
}

/// Marks this thread as running a one-thread plan ([`serial`]) until dropped, restoring what
/// was there (plans nest through control-flow bodies).
pub(crate) struct Serial(bool);

impl Serial {
    pub(crate) fn enter() -> Serial {
        Serial(SERIAL.replace(true))
    }
}

impl Drop for Serial {
    fn drop(&mut self) {
        SERIAL.set(self.0);
    }
}

/// Runs `run` (a whole plan, on a worker of a pool) while the pool's other workers poll for
/// its kernels' jobs instead of going to sleep between them.
///
/// A plan is a chain of kernels, most of which split their work over the pool and join. Between
/// two kernels rayon's idle workers spin briefly, then sleep on a futex; the next kernel's
/// split then pays a wake-up per worker, and a worker that does not wake in time leaves its
/// share to the others. On a BERT-mini at two threads that was a fifth of the run (perf:
/// `futex_wake`, `sched_yield`, context switches). ONNX Runtime's pool spins through a run for
/// the same reason. Here each other worker takes a keeper job that runs pending jobs of the
/// pool (`rayon::yield_now`) until the plan is done; the keeper broadcast to the plan's own
/// thread returns at once, so nothing waits on itself.
pub(crate) fn with_warm_workers<R: Send>(run: impl FnOnce() -> R + Send) -> R {
    let (Some(host), threads) = (rayon::current_thread_index(), rayon::current_num_threads()) else {
        return run();
    };
    if threads < 2 || serial() {
        return run();
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    rayon::in_place_scope(|s| {
        // One keeper per worker, in each worker's own queue: spawned into the host's deque,
        // a keeper not yet stolen when the plan's first join waits would be popped by the host.
        s.spawn_broadcast(|_, _| keep_warm(host, &done));
        // Set when the plan ends, also by a panic's unwinding: the scope then waits for the
        // keepers, which must see it.
        let _done = Done(&done);
        let outer = HOSTING_WARM.replace(true);
        let _restore = Restore(outer);
        run()
    })
}

/// Puts back the host's earlier [`HOSTING_WARM`] when dropped (also by a panic's unwinding).
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        HOSTING_WARM.set(self.0);
    }
}

/// Sets its flag when dropped.
struct Done<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

thread_local! {
    /// Whether this worker is a keeper of [`with_warm_workers`] (a job it runs sees it).
    static KEEPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling job runs inside a keeper of [`with_warm_workers`].
#[cfg(test)]
pub(crate) fn in_keeper() -> bool {
    KEEPING.get()
}

/// How long a keeper of [`with_warm_workers`] polls without finding a job before it returns.
///
/// A keeper must not outlive its use: a worker that was already looking for work when the
/// keepers were broadcast may steal a kernel's job first and take its keeper while waiting in
/// that job's join. Nested so, the keeper holds up a job the plan waits on, and `done` never
/// comes; having found nothing to run for this long, it returns and the job goes on. Gaps
/// between a plan's parallel loops are mostly shorter; after a longer serial kernel the
/// worker is back in rayon's own idle loop, as without keepers.
const KEEPER_IDLE: std::time::Duration = std::time::Duration::from_micros(200);

/// Idle polls of a keeper between two reads of the clock (a poll that finds no job is well
/// under a microsecond, so [`KEEPER_IDLE`] is still kept to within a few percent).
const CLOCK_EVERY: u32 = 16;

/// A keeper of [`with_warm_workers`]: runs the pool's pending jobs until `done`, or until it
/// has found none for [`KEEPER_IDLE`].
fn keep_warm(host: usize, done: &std::sync::atomic::AtomicBool) {
    if rayon::current_thread_index() == Some(host) {
        return;
    }
    let outer = KEEPING.replace(true);
    let mut idle_since = None;
    // Idle polls since the clock was last read: reading it on every poll was 3% of a
    // two-thread MobileNet-v2 run on a VM whose clock reads cost a few hundred cycles.
    let mut polls = 0u32;
    while !done.load(std::sync::atomic::Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            (idle_since, polls) = (None, 0);
            continue;
        }
        std::hint::spin_loop();
        polls += 1;
        if polls % CLOCK_EVERY != 1 {
            continue;
        }
        let now = std::time::Instant::now();
        match idle_since {
            None => idle_since = Some(now),
            Some(since) if now.duration_since(since) > KEEPER_IDLE => break,
            Some(_) => {}
        }
    }
    KEEPING.set(outer);
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::with_warm_workers;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The plan's value comes back, its parallel loops complete, and the keepers stop with it
    /// (the call returns), run after run. With three threads a worker sometimes steals a
    /// loop's job before its keeper and nests the keeper under it: this hung before keepers
    /// gave up when idle.
    #[test]
    fn warm_workers_run_the_plan_and_stop_with_it() {
        let p = pool(3);
        for round in 0..2_000u64 {
            let sum =
                p.install(|| with_warm_workers(|| (0..10_000u64).into_par_iter().map(|v| v * round).sum::<u64>()));
            assert_eq!(sum, round * 9_999 * 10_000 / 2);
        }
        // Outside any pool, and in a one-thread pool, the plan just runs.
        assert_eq!(with_warm_workers(|| 7), 7);
        assert_eq!(pool(1).install(|| with_warm_workers(|| 8)), 8);
    }

    /// A plan that panics still ends the keepers: the panic reaches the caller instead of the
    /// scope waiting for ever.
    #[test]
    fn a_panicking_plan_releases_the_keepers() {
        let p = pool(2);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.install(|| with_warm_workers(|| -> u32 { panic!("plan failed") }))
        }));
        assert!(caught.is_err());
        // The pool still works afterwards.
        assert_eq!(p.install(|| with_warm_workers(|| (0..100u32).into_par_iter().sum::<u32>())), 4950);
        // And the host is no longer marked warm after the unwinding.
        assert!(!p.install(super::warm));
    }

    /// A plan's host sees its pool warm while the plan runs, and not before or after, nor
    /// inside a one-thread plan it runs itself.
    #[test]
    fn warm_only_while_a_plan_is_hosted_with_keepers() {
        let p = pool(2);
        assert!(!p.install(super::warm));
        assert!(p.install(|| with_warm_workers(super::warm)));
        assert!(!p.install(|| with_warm_workers(|| {
            let _serial = super::Serial::enter();
            super::warm()
        })));
        assert!(!p.install(super::warm));
        // A one-thread pool has no keepers.
        assert!(!pool(1).install(|| with_warm_workers(super::warm)));
    }
}
