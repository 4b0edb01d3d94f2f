//! The windows of one output row, clipped to the input.

use smallvec::SmallVec;

use super::{Geo, TILE};
use crate::kernels::window::valid_range;

/// The windows of one output row clipped to the input, shared by both convs' spans: kernel
/// rows outside the input are dropped for the whole row, and a pixel whose window crosses the
/// left or right edge gets the taps inside it. Taps are (input offset, packed weight offset),
/// the weights `tap_w` elements per tap.
pub(super) struct RowWindows<'a> {
    g: &'a Geo,
    tap_w: usize,
    /// Kernel rows inside the input: (kernel row, offset of its input row in a plane).
    rows: SmallVec<[(usize, usize); 8]>,
    /// Interior taps, from a pixel's leftmost input column.
    pub(super) inner: SmallVec<[(usize, usize); 64]>,
    /// The interior pixels, whose whole window row lies inside the input.
    lo: usize,
    pub(super) hi: usize,
}

impl<'a> RowWindows<'a> {
    pub(super) fn new(g: &'a Geo, oy: usize, tap_w: usize) -> RowWindows<'a> {
        let ([ih, iw], [kh, kw], [sh, sw], [dh, dw], [pt, pl], e) = (g.i, g.k, g.s, g.d, g.p, g.e);
        let rows: SmallVec<[(usize, usize); 8]> = (0..kh)
            .filter_map(|a| {
                let iy = (oy * sh + a * dh).checked_sub(pt).filter(|iy| *iy < ih)?;
                Some((a, iy * iw * e))
            })
            .collect();
        let inner =
            rows.iter().flat_map(|&(a, ro)| (0..kw).map(move |c| (ro + c * dw * e, (a * kw + c) * tap_w))).collect();
        let (lo1, hi1) = valid_range(g.o[1], iw, sw, -(pl as isize));
        let (lo2, hi2) = valid_range(g.o[1], iw, sw, ((kw - 1) * dw) as isize - pl as isize);
        // No interior without a kernel row inside the input (an empty input with padding).
        let (lo, hi) = if rows.is_empty() { (0, 0) } else { (lo1.max(lo2), hi1.min(hi2)) };
        RowWindows { g, tap_w, rows, inner, lo, hi }
    }

    /// Whether pixel `ox` is interior (its taps are [`RowWindows::inner`]).
    pub(super) fn is_inner(&self, ox: usize) -> bool {
        ox >= self.lo && ox < self.hi
    }

    /// The tile starting at pixel `ox` (of a span ending at `end`) over a plane starting at
    /// `base`: its taps, the input index they are offsets from, and its width — up to
    /// [`TILE`] interior pixels, or one edge pixel with its taps built in `edge`. Inlined: as
    /// a call, its returned tuple was read back through a stalled store forward, a tenth of
    /// MobileNetV2's time.
    #[inline(always)]
    pub(super) fn at<'s>(
        &'s self,
        ox: usize,
        end: usize,
        base: usize,
        edge: &'s mut SmallVec<[(usize, usize); 64]>,
    ) -> (&'s [(usize, usize)], usize, usize) {
        let g = self.g;
        let ([_, iw], [_, kw], [_, sw], [_, dw], [_, pl], e) = (g.i, g.k, g.s, g.d, g.p, g.e);
        if self.is_inner(ox) {
            // The run's tiles as even as they can be: 49 pixels as 10+10+10+10+9, not four
            // of 12 and one of 1 (a tile reads every weight once, whatever its width).
            let run = end.min(self.hi) - ox;
            return (&self.inner[..], base + (ox * sw - pl) * e, run.div_ceil(run.div_ceil(TILE)));
        }
        edge.clear();
        for &(a, ro) in &self.rows {
            for c in 0..kw {
                if let Some(ix) = (ox * sw + c * dw).checked_sub(pl).filter(|ix| *ix < iw) {
                    edge.push((ro + ix * e, (a * kw + c) * self.tap_w));
                }
            }
        }
        (&edge[..], base, 1)
    }
}

/// Spans per output row for `rows` (images × block pairs × output rows) of a regular conv, at
/// least `spans` of a row `ow` pixels wide, so that the tasks share out evenly over `threads`.
///
/// Each of a task's tiles reads all of its blocks' weights whatever the span, so cutting a
/// row into more spans costs only a task each, while tasks that do not divide by the threads
/// leave one idle at the end: a 7 × 7 pointwise conv to 160 channels is 5 tasks of one row,
/// 3 and 2 on two threads (0.83 of both), and 10 tasks of half a row share evenly. The first
/// count from `spans` up (spans of at least one tile) whose tasks keep the threads 95% busy,
/// else the busiest.
pub(super) fn balanced_spans(rows: usize, spans: usize, ow: usize, threads: usize) -> usize {
    let busy = |s: usize| {
        let tasks = rows * s;
        tasks as f64 / (tasks.div_ceil(threads) * threads) as f64
    };
    let most = ow.div_ceil(TILE).max(spans);
    let mut best = spans;
    for s in spans..=most {
        if busy(s) >= 0.95 {
            return s;
        }
        if busy(s) > busy(best) + 1e-9 {
            best = s;
        }
    }
    best
}

/// Weights a thread's run of tasks keeps reusing from its core's L2 cache: half of the 1 MiB
/// L2 of the Zen 4 and Xeon cores measured, the rest for the input rows and the output.
const L2_WEIGHTS: usize = 512 * 1024;

/// The order of a conv's tasks, `groups` (of output blocks) × `rows` (images × output rows ×
/// spans). The threads take contiguous shares of it, so the order decides what each core
/// reads again from its L2 and what from further away. Groups come in chunks whose weights
/// fit [`L2_WEIGHTS`]; inside a chunk the groups vary fastest, so a row of input is read once
/// for the chunk's groups and the chunk's weights once per share. Small weights (a pointwise
/// conv of few channels: one chunk) make the shares runs of rows of every group, each input
/// row read once, where a share of whole groups read the whole input once per group (a 56 ×
/// 56 pointwise conv to 256 channels, 2 threads: 1.12 → 1.03 × onnxruntime); large weights
/// (512 channels of 3 × 3 at 7 × 7: 590 KB a pair of blocks) make chunks of one group, all
/// rows of a group in a row while its weights stay in L2.
#[derive(Clone, Copy, Debug)]
pub(super) struct TaskOrder {
    groups: usize,
    rows: usize,
    chunk: usize,
}

impl TaskOrder {
    /// The order for `groups × rows` tasks whose group reads `group_bytes` of weights.
    pub(super) fn new(groups: usize, rows: usize, group_bytes: usize) -> TaskOrder {
        let chunk = (L2_WEIGHTS / group_bytes.max(1)).clamp(1, groups.max(1));
        TaskOrder { groups, rows, chunk }
    }

    /// The number of tasks.
    pub(super) fn len(&self) -> usize {
        self.groups * self.rows
    }

    /// Task `t` (below [`TaskOrder::len`]) as `(group, row)`.
    pub(super) fn at(&self, t: usize) -> (usize, usize) {
        let per_chunk = self.rows * self.chunk;
        let c = t / per_chunk;
        // The last chunk may hold fewer groups.
        let width = self.chunk.min(self.groups - c * self.chunk);
        let i = t - c * per_chunk;
        (c * self.chunk + i % width, i / width)
    }
}

#[cfg(test)]
mod tests {
    use super::{L2_WEIGHTS, TaskOrder, balanced_spans};

    /// Every (group, row) once; groups fastest inside a chunk, chunks of the weights that fit.
    #[test]
    fn task_order_covers_every_task_once_in_chunks() {
        for (groups, rows, bytes) in [(8, 33, 8 << 10), (16, 7, 590 << 10), (5, 3, 200 << 10), (1, 1, 1), (3, 4, 0)] {
            let order = TaskOrder::new(groups, rows, bytes);
            let mut seen = vec![false; groups * rows];
            let tasks: Vec<_> = (0..order.len()).map(|t| order.at(t)).collect();
            for &(g, r) in &tasks {
                assert!(g < groups && r < rows, "{groups}x{rows}: ({g}, {r})");
                assert!(!std::mem::replace(&mut seen[g * rows + r], true), "({g}, {r}) twice");
            }
            assert!(seen.iter().all(|s| *s));
            let chunk = (L2_WEIGHTS / bytes.max(1)).clamp(1, groups);
            // Consecutive tasks inside a chunk: the next group of the same row, or the next row.
            for w in tasks.windows(2) {
                let ((g0, r0), (g1, r1)) = (w[0], w[1]);
                let same_chunk = g0 / chunk == g1 / chunk;
                assert!(!same_chunk || (r1 == r0 && g1 == g0 + 1) || (r1 == r0 + 1 && g1 % chunk == 0), "{w:?}");
            }
        }
        // Small weights: all groups of row 0 first. Large: all rows of group 0 first.
        let small = TaskOrder::new(8, 33, 8 << 10);
        assert_eq!((0..8).map(|t| small.at(t)).collect::<Vec<_>>(), (0..8).map(|g| (g, 0)).collect::<Vec<_>>());
        let large = TaskOrder::new(16, 7, 590 << 10);
        assert_eq!((0..7).map(|t| large.at(t)).collect::<Vec<_>>(), (0..7).map(|r| (0, r)).collect::<Vec<_>>());
        // 200 KB groups: chunks of 2, the last of 1.
        let odd = TaskOrder::new(5, 3, 200 << 10);
        assert_eq!(odd.at(0), (0, 0));
        assert_eq!(odd.at(1), (1, 0));
        assert_eq!(odd.at(2), (0, 1));
        assert_eq!(odd.at(12), (4, 0));
        assert_eq!(odd.at(14), (4, 2));
    }

    /// Tasks per thread even where a row's spans alone leave a thread idle, never more spans
    /// than tiles, and unchanged where the tasks already share out.
    #[test]
    fn spans_share_the_tasks_out_evenly() {
        // 7 × 7 pointwise to 160 channels: 5 block pairs of one 49-pixel row.
        assert_eq!(balanced_spans(5, 1, 49, 2), 2);
        // 14 × 14 pointwise to 96 channels: 3 pairs, 3 spans of 66 pixels give 9 tasks.
        assert_eq!(balanced_spans(3, 3, 196, 2), 4);
        // Already even, or one thread.
        assert_eq!(balanced_spans(56, 1, 56, 2), 1);
        assert_eq!(balanced_spans(5, 1, 49, 1), 1);
        // A row of one tile cannot be cut: 3 tasks stay 3.
        assert_eq!(balanced_spans(3, 1, 12, 2), 1);
        // No count reaches 95%: the busiest from the start (3 rows, 2 tiles: 6 tasks of 4 threads).
        assert_eq!(balanced_spans(3, 1, 24, 4), 1);
    }
}
