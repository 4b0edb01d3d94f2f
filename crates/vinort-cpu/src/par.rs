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
