//! 2-D f32 convolutions in the blocked NCHWc layout `[N, ⌈C/16⌉, H, W, 16]`: the sixteen
//! channels of one block sit side by side at each pixel, one AVX-512 register. The optimizer's
//! layout pass ([`crate::optimize::layout`]) rewrites the Convs of a partition into this form,
//! with a reorder where a value enters or leaves it, as ONNX Runtime's NCHWc transformer does.
//!
//! Why a layout of its own: in NCHW a convolution is im2col plus a GEMM that packs both
//! operands on every call, and the bias, residual and activation are further passes over the
//! output; a depthwise conv has one plane per channel and nothing to vectorize across. In NCHWc
//! every multiply-add is a vector over 16 output channels, read from the input in place:
//! - a regular conv broadcasts one input value and multiplies it by 16 output channels'
//!   weights, for a tile of up to 12 pixels × 32 output channels held in registers over every
//!   tap and input channel (weights packed once, at compile time, per block of 16 outputs);
//! - a depthwise conv multiplies 16 channels of one pixel by their 16 weights per tap.
//!
//! The bias, a residual and the activation are applied to each tile before it leaves the
//! registers or the cache. No tap is bounds-checked in the inner loops: both convs drop kernel
//! rows outside the input per output row; a regular conv reads a copy of its input widened by
//! its left and right padding (its work per input element is large, and an edge pixel as a
//! tile of its own reads every weight for one pixel), a depthwise conv gives the few pixels at
//! the left and right edges their own list of taps. A regular conv of fewer than 16 input channels
//! (a network's first, on an image) reads NCHW planes in place instead of a blocked copy.
//!
//! Hand-written: no crate offers convolutions in a blocked layout, and the GEMM crate cannot
//! keep packed weights across calls or apply a tail inside its tiles.
//!
//! The lanes of the last block past C are padding: they hold whatever the lanes' zero weights
//! and zero bias make of the tail (for a HardSigmoid, 0.5), never read as results: a conv
//! multiplies only the first C input lanes and a reorder back copies only C channels.
//!
//! Two kernel sets over the same layout ([`Tiles`]): AVX-512, where a block is one register,
//! and AVX2 with FMA, where a block is two and the tiles are smaller (16 registers instead of
//! 32: a regular tile is one output block × up to 6 pixels, a wider tile runs as several). The
//! layout pass runs only where [`available`] says so, and the NCHW kernels serve every other
//! CPU.
//!
//! Here the layout's ops and the conv's walk over a row; `reorder.rs` the reorders in and out
//! (and the widened input); `windows.rs` a row's windows clipped to the input; `tiles.rs` the
//! choice of a tile kernel; `x86.rs` the tiles themselves.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

mod reorder;
mod tiles;
mod windows;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use tiles::{NO_CLAMP, Out, RegularTile, regular_tile_dispatch};

use reorder::{ReorderInput, ReorderOutput};
use tiles::depthwise_tile_dispatch;
use windows::{RowWindows, TaskOrder, balanced_spans};

use crate::kernel::{Kernel, NodeInfo, tensor_in};
use crate::kernels::epilogue::Epilogue;
use crate::kernels::window::{Window, WindowAttrs};
use smallvec::SmallVec;

/// Channels per block: one AVX-512 register of f32.
pub(crate) const BLOCK: usize = 16;

/// The domain of the layout's private ops (`ReorderInput`, `ReorderOutput`, `Conv`,
/// `MaxPool`).
pub(crate) const DOMAIN: &str = "vinort.nchwc";

/// The kernel set that runs the layout's tiles on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tiles {
    /// AVX-512F: a block is one zmm register.
    Avx512,
    /// AVX2 and FMA: a block is two ymm registers.
    Avx2,
}

/// The best kernel set of this CPU under the kernel level ([`crate::isa`]), if it has one.
pub(crate) fn tiles() -> Option<Tiles> {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            return Some(Tiles::Avx512);
        }
        if crate::isa::avx2() {
            return Some(Tiles::Avx2);
        }
    }
    None
}

/// True when this CPU runs the NCHWc kernels (AVX-512F, or AVX2 with FMA).
pub(crate) fn available() -> bool {
    tiles().is_some()
}

/// Pixels per AVX2 tile: 2·6 accumulators, 2 weight registers and a broadcast fill 15 of the
/// 16 ymm registers.
#[cfg(target_arch = "x86_64")]
const AVX2_PIXELS: usize = 6;

/// Blocks holding `c` channels.
pub(crate) fn blocks(c: usize) -> usize {
    c.div_ceil(BLOCK)
}

/// Builds the kernel of one of the layout's ops.
pub(crate) fn factory(info: &NodeInfo<'_>, epi: Epilogue) -> Result<Box<dyn Kernel>> {
    if !available() {
        return Err(Error::unsupported("NCHWc kernels need AVX-512F, or AVX2 with FMA"));
    }
    let node = info.node;
    match node.op_type.as_str() {
        "ReorderInput" => Ok(Box::new(ReorderInput { channels: channels(node)? })),
        "ReorderOutput" => Ok(Box::new(ReorderOutput { channels: channels(node)? })),
        "Conv" => Ok(Box::new(BlockedConv::new(info, epi)?)),
        "MaxPool" if epi.is_empty() => Ok(Box::new(crate::kernels::pool::blocked::BlockedMaxPool::new(info)?)),
        other => Err(Error::unsupported(format!("{DOMAIN}::{other}"))),
    }
}

/// A reorder's `channels` attribute: the channel count of the value it moves.
fn channels(node: &vinort_ir::Node) -> Result<usize> {
    let c = node.attr::<i64>("channels")?.and_then(|c| usize::try_from(c).ok());
    c.ok_or_else(|| Error::invalid(format!("{} needs a channel count", node.op_type)))
}

/// The f32 elements of input `i`, aligned.
pub(crate) fn input_f32<'a>(
    inputs: &[Option<&'a Value>],
    i: usize,
) -> Result<(std::borrow::Cow<'a, Tensor>, vinort_ir::Shape)> {
    let t = tensor_in(inputs, i)?;
    if t.dtype() != DType::F32 {
        return Err(Error::invalid(format!("NCHWc kernels take f32, got {}", t.dtype())));
    }
    let shape = t.shape().into();
    let t = match t.as_slice::<f32>() {
        Ok(_) => std::borrow::Cow::Borrowed(t),
        Err(_) => std::borrow::Cow::Owned(t.to_aligned()),
    };
    Ok((t, shape))
}

/// A Conv with constant weights, regular (group 1) or depthwise (one channel per group), in
/// NCHWc, with its fused tail.
struct BlockedConv {
    win: Window,
    /// Input channels (equal to `cout` when depthwise).
    pub cin: usize,
    cout: usize,
    depthwise: bool,
    /// The input is plain NCHW (a regular conv of fewer than 16 input channels whose input
    /// is not blocked: each channel is read from its own plane, no reorder).
    nchw_input: bool,
    kernel: [usize; 2],
    /// Regular: `[⌈M/16⌉][tap][C][16]`; depthwise: `[⌈C/16⌉][tap][16]`; output lanes past M
    /// zero. A tensor for its 64-byte alignment.
    w: Tensor,
    /// `⌈M/16⌉ × 16` biases, zero past M.
    bias: Tensor,
    residual: Option<usize>,
    /// The activation and clamp after the product (the epilogue's rest).
    tail: Epilogue,
}

impl BlockedConv {
    fn new(info: &NodeInfo<'_>, epi: Epilogue) -> Result<BlockedConv> {
        let node = info.node;
        if epi.scale.is_some() || epi.bias.is_some() {
            return Err(Error::invalid("an NCHWc Conv takes only a residual and an activation"));
        }
        let w = info.const_input(1).ok_or_else(|| Error::invalid("an NCHWc Conv needs constant weights"))?;
        let w = w.to_aligned();
        let (ws, wv) = (w.shape().to_vec(), w.as_slice::<f32>()?);
        let &[m, cg, kh, kw] = ws.as_slice() else {
            return Err(Error::invalid(format!("an NCHWc Conv needs 4-D weights, got {ws:?}")));
        };
        let group = usize::try_from(node.attr_or::<i64>("group", 1)?).unwrap_or(0);
        let depthwise = group != 1;
        if depthwise && (cg != 1 || group != m) {
            return Err(Error::invalid(format!("group {group} with W {ws:?} is neither regular nor depthwise")));
        }
        let cin = if depthwise { m } else { cg };
        let nchw_input = node.attr_or::<i64>("nchw_input", 0)? != 0;
        if nchw_input && (depthwise || cin >= BLOCK) {
            return Err(Error::invalid("an NCHWc Conv reads NCHW only for a regular conv of under 16 channels"));
        }
        if kh == 0 || kw == 0 {
            return Err(Error::invalid(format!("an NCHWc Conv needs a non-empty kernel, got W {ws:?}")));
        }
        let win = WindowAttrs::parse(node)?.resolve(&[kh, kw])?;
        let (taps, mb) = (kh * kw, blocks(m));
        let packed = if depthwise {
            Tensor::build::<f32>(&[mb * taps * BLOCK], |p| {
                for (o, &v) in wv.iter().enumerate() {
                    let (oc, t) = (o / taps, o % taps);
                    p[((oc / BLOCK) * taps + t) * BLOCK + oc % BLOCK] = v;
                }
            })
        } else {
            Tensor::build::<f32>(&[mb * taps * cin * BLOCK], |p| {
                for (o, &v) in wv.iter().enumerate() {
                    let (oc, ic, t) = (o / (cin * taps), (o / taps) % cin, o % taps);
                    p[(((oc / BLOCK) * taps + t) * cin + ic) * BLOCK + oc % BLOCK] = v;
                }
            })
        };
        let b = match info.const_input(2) {
            Some(b) => Some(b.to_aligned()),
            None if node.inputs.get(2).copied().flatten().is_some() => {
                return Err(Error::invalid("an NCHWc Conv needs a constant bias"));
            }
            None => None,
        };
        let bv = b.as_ref().map(|b| b.as_slice::<f32>()).transpose()?;
        if bv.is_some_and(|b| b.len() != m) {
            return Err(Error::invalid(format!("B must have {m} elements")));
        }
        let bias = Tensor::build::<f32>(&[mb * BLOCK], |o| {
            if let Some(b) = bv {
                o[..m].copy_from_slice(b);
            }
        });
        Ok(BlockedConv {
            win,
            cin,
            cout: m,
            depthwise,
            nchw_input,
            kernel: [kh, kw],
            w: packed,
            bias,
            residual: epi.residual,
            tail: Epilogue { act: epi.act, clamp: epi.clamp, ..Epilogue::default() },
        })
    }
}

impl Kernel for BlockedConv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, s) = input_f32(inputs, 0)?;
        // Planes of the input and elements per pixel in each.
        let (n, cb, h, w, e) = match *s.as_slice() {
            [n, c, h, w] if self.nchw_input && c == self.cin => (n, c, h, w, 1),
            [n, cb, h, w, BLOCK] if !self.nchw_input && cb == blocks(self.cin) => (n, cb, h, w, BLOCK),
            _ => {
                let want = if self.nchw_input { "[N, C, H, W]" } else { "[N, C/16, H, W, 16]" };
                return Err(Error::invalid(format!("an NCHWc Conv of {} channels takes {want}, got {s:?}", self.cin)));
            }
        };
        let geo = self.win.geometry(&[h, w])?;
        let (oh, ow) = (geo.out[0], geo.out[1]);
        let mb = blocks(self.cout);
        let out_shape = [n, mb, oh, ow, BLOCK];
        let z = match self.residual {
            Some(i) => {
                let (z, zs) = input_f32(inputs, i)?;
                if zs.as_slice() != out_shape {
                    return Err(Error::invalid(format!("fused residual {zs:?} for an output {out_shape:?}")));
                }
                Some(z)
            }
            None => None,
        };
        let x = x.as_slice::<f32>()?;
        let zs = z.as_ref().map(|z| z.as_slice::<f32>()).transpose()?;
        let (s, d) = ([self.win.strides[0], self.win.strides[1]], [self.win.dilations[0], self.win.dilations[1]]);
        // A regular conv reads a copy of its input widened by its left and right padding:
        // a pixel whose window crosses an edge would otherwise be a tile of its own, one
        // broadcast per two weight vectors and every weight read again for it (on a 7-pixel
        // row, 2 of 7 pixels; ResNet-50's last stage ran at half the rate so). Kernel rows
        // above and below the input are dropped per row instead (no cost).
        let pl = geo.pad_begin[1];
        let pr = ((ow.max(1) - 1) * s[1] + (self.kernel[1] - 1) * d[1] + 1).saturating_sub(pl + w);
        let widened = if !self.depthwise && pl + pr > 0 && !out_shape.contains(&0) {
            Some(reorder::pad_columns(x, n * cb * h, w, e, pl, pr)?)
        } else {
            None
        };
        let (x, iw, pl) = match &widened {
            Some(t) => (t.as_slice::<f32>()?, pl + w + pr, 0),
            None => (x, w, pl),
        };
        let y = Tensor::try_build_full::<f32, Error>(&out_shape, |y| {
            if y.is_empty() {
                return Ok(());
            }
            let g = Geo { n, cb, e, mb, i: [h, iw], o: [oh, ow], k: self.kernel, s, d, p: [geo.pad_begin[0], pl] };
            self.compute(&g, x, zs, y)
        })?;
        Ok(smallvec::smallvec![y.into()])
    }

    /// The weights and bias were packed when the kernel was built.
    fn holds_input(&self, i: usize) -> bool {
        (i == 1 || i == 2) && self.residual != Some(i)
    }
}

/// The geometry of one run, after padding is resolved.
#[derive(Clone, Copy)]
struct Geo {
    n: usize,
    /// Input planes: blocks of 16 channels, or channels when the input is NCHW.
    cb: usize,
    /// Elements per input pixel in a plane: 16, or 1 when the input is NCHW.
    e: usize,
    /// Output blocks.
    mb: usize,
    i: [usize; 2],
    o: [usize; 2],
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    /// Begin pads.
    p: [usize; 2],
}

/// Output pixels one task covers along a row: a multiple of the widest tile.
const SPAN: usize = 8 * TILE;
/// The widest tile, in pixels.
const TILE: usize = 12;
/// Depthwise tasks wanted per conv, at least: blocks are shared out to reach it.
const DW_TASKS: usize = 64;

impl BlockedConv {
    /// Fills `y` (`[N, Mb, OH, OW, 16]`) from the input `x`.
    fn compute(&self, g: &Geo, x: &[f32], z: Option<&[f32]>, y: &mut [f32]) -> Result<()> {
        // A 1x1 stride-1 unpadded conv over the whole input is one long row of pixels.
        let pointwise = g.k == [1, 1] && g.s == [1, 1] && g.p == [0, 0] && g.i == g.o;
        let g = if pointwise { Geo { i: [1, g.i[0] * g.i[1]], o: [1, g.o[0] * g.o[1]], ..*g } } else { *g };
        let [ih, iw] = g.i;
        let [oh, ow] = g.o;
        let size = |v: [usize; 5]| v.iter().try_fold(1usize, |a, b| a.checked_mul(*b));
        if size([g.n, g.cb, ih, iw, g.e]) != Some(x.len()) || size([g.n, g.mb, oh, ow, BLOCK]) != Some(y.len()) {
            return Err(Error::invalid("NCHWc Conv buffers do not match their shapes"));
        }
        let taps = g.k[0] * g.k[1];
        // Spans of equal width (96 and 4 pixels would leave a thin tile reading every weight).
        let mut spans = ow.div_ceil(SPAN);
        // Regular convs pair output blocks (two registers per pixel). A depthwise task takes
        // a run of blocks, enough rows' worth of tasks left for the threads: one block of one
        // row was too little work for the task's setup (its windows, its edge taps).
        let per = if self.depthwise { g.mb.div_ceil(DW_TASKS.div_ceil(g.n * oh * spans).clamp(1, g.mb)) } else { 2 };
        let groups = g.mb.div_ceil(per);
        let macs = y.len() * taps * if self.depthwise { 1 } else { self.cin };
        let parallel = crate::par::worth(macs, crate::par::MACS);
        if parallel && !self.depthwise {
            spans = balanced_spans(g.n * groups * oh, spans, ow, rayon::current_num_threads());
        }
        let span = ow.div_ceil(spans.max(1));
        // A depthwise group's weights are a few KB but its input is its own: all rows of a
        // group in a row, so adjacent rows share their input rows.
        let group_bytes = if self.depthwise { usize::MAX } else { 2 * taps * self.cin * BLOCK * 4 };
        let order = TaskOrder::new(groups, g.n * oh * spans, group_bytes);
        let tasks = order.len();
        let out = Out(y.as_mut_ptr());
        let task = |t: usize| {
            let (grp, rest) = order.at(t);
            let (rest, sp) = (rest / spans, rest % spans);
            let (img, oy) = (rest / oh, rest % oh);
            let (ox0, ox1) = (sp * span, ((sp + 1) * span).min(ow));
            let job = Job { g: &g, x, z, img, oy, ox0, ox1, out };
            if self.depthwise {
                self.depthwise_span(&job, grp * per..((grp + 1) * per).min(g.mb))
            } else {
                self.regular_span(&job, grp)
            }
        };
        if tasks > 1 && parallel {
            use rayon::prelude::*;
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
        Ok(())
    }

    /// Output blocks `2·grp` and `2·grp + 1` (when it exists) over one span of one row.
    /// Windows are clipped to the input as in [`BlockedConv::depthwise_span`]: kernel rows
    /// outside it are dropped for the whole row, and pixels whose window crosses the left or
    /// right edge get the taps inside, one pixel at a time — which happens only when the
    /// caller did not widen the input ([`BlockedConv::run`] does whenever there is padding).
    fn regular_span(&self, j: &Job<'_>, grp: usize) {
        let g = j.g;
        let ([ih, iw], [kh, kw], sw) = (g.i, g.k, g.s[1]);
        let e = g.e;
        let ob = 2 * grp;
        let nob = (g.mb - ob).min(2);
        let (w, b) = (self.w.as_slice::<f32>().unwrap_or_default(), self.bias.as_slice::<f32>().unwrap_or_default());
        let tap_w = self.cin * BLOCK;
        let wob = kh * kw * tap_w;
        let plane = ih * iw;
        // The image's first input plane.
        let img = j.img * g.cb * plane * e;
        let win = RowWindows::new(g, j.oy, tap_w);
        // Blocked: 16 adjacent lanes per plane; NCHW: all channels in one "block", a plane apart.
        let (lpb, lane) = if e == 1 { (self.cin, plane) } else { (BLOCK, 1) };
        for o in 0..nob {
            debug_assert!(w.len() >= (ob + o + 1) * wob && b.len() >= (ob + o + 1) * BLOCK);
        }
        // Relu and Clip are applied by the tile as it stores; other activations after the span.
        let clamp = self.tail.store_clamp();
        // Input channels per pass over the span: as many as keep the passes' weights in the
        // L1 cache (24 KiB), a multiple of 16. Each tile reads all the pass's weights, and
        // with every channel in one pass they came from L2 for every tile of 12 pixels;
        // a pass over fewer channels is read by every tile of the span, and the sums go
        // through `y` between passes. One pass when the input is NCHW, or an edge pixel
        // (its own taps) is in the span.
        let taps = win.inner.len().max(1);
        let budget = (24 * 1024 / (std::mem::size_of::<f32>() * BLOCK * nob * taps)) / BLOCK * BLOCK;
        let inner = win.is_inner(j.ox0) && j.ox1 <= win.hi;
        let chunk = if e == BLOCK && inner { budget.max(BLOCK) } else { self.cin };
        let mut edge = SmallVec::new();
        for c0 in (0..self.cin).step_by(chunk) {
            let cin = chunk.min(self.cin - c0);
            let (from_y, finish) = (c0 > 0, c0 + cin == self.cin);
            // Channel c0 is lane 0 of input block c0 / 16 (c0 is a multiple of 16 when c0 > 0).
            let (xc, wc) = ((c0 / BLOCK) * plane * e, c0 * BLOCK);
            let mut ox = j.ox0;
            while ox < j.ox1 {
                let (taps, x0, r) = win.at(ox, j.ox1, img, &mut edge);
                let ctx = RegularTile {
                    taps,
                    cin,
                    lpb,
                    lane,
                    blk: plane * e,
                    px: sw * e,
                    wob,
                    ys: BLOCK,
                    clamp: clamp.unwrap_or(NO_CLAMP),
                    from_y,
                    finish,
                };
                let ys: [usize; 2] = std::array::from_fn(|o| j.y_at(ob + o.min(nob - 1), ox));
                // SAFETY: every tap reads an input row and column inside the image (rows and
                // columns were checked against the input just above, and for interior pixels
                // by `valid_range`), r interior pixels at stride sw stay interior, and the
                // channel walk of channels c0 .. c0 + cin stays within the image's cb planes;
                // the packed weights hold Mb blocks of `wob` (built so in `new`), a tap's
                // channels c0 on starting c0·16 into it; ys are r pixels of this task's own
                // rows of `y` (and of `z`, which has y's shape), written by no other task
                // (and by this one in the previous pass when `from_y`).
                unsafe {
                    regular_tile_dispatch(
                        &ctx,
                        nob,
                        r,
                        j.x.as_ptr().add(x0 + xc),
                        w.as_ptr().add(ob * wob + wc),
                        b.as_ptr().add(ob * BLOCK),
                        ys.map(|i| j.out.0.add(i)),
                        j.z.map(|z| ys.map(|i| z.as_ptr().add(i))),
                        [u16::MAX; 2],
                    );
                }
                ox += r;
            }
        }
        if clamp.is_none() && !self.tail.is_empty() {
            for o in 0..nob {
                let i = j.y_at(ob + o, j.ox0);
                // SAFETY: this task's span of its row of block ob + o, written above by it alone.
                let s = unsafe { std::slice::from_raw_parts_mut(j.out.0.add(i), (j.ox1 - j.ox0) * BLOCK) };
                self.tail.activate(s);
            }
        }
    }

    /// Output (= input) blocks `blocks` over one span of one row. Windows are clipped to the
    /// input: kernel rows outside it are dropped for the whole row, and pixels whose window
    /// crosses the left or right edge get the taps inside, one pixel at a time. The row's
    /// tiles are laid out once and walked for every block.
    fn depthwise_span(&self, j: &Job<'_>, blocks: std::ops::Range<usize>) {
        let g = j.g;
        let ([ih, iw], [kh, kw], sw) = (g.i, g.k, g.s[1]);
        let (w, b) = (self.w.as_slice::<f32>().unwrap_or_default(), self.bias.as_slice::<f32>().unwrap_or_default());
        debug_assert!(w.len() >= blocks.end * kh * kw * BLOCK && b.len() >= blocks.end * BLOCK);
        let win = RowWindows::new(g, j.oy, BLOCK);
        let clamp = self.tail.store_clamp();
        // The tiles: (first pixel, width, input offset from the plane, the taps' range in
        // `taps`), the interior ones sharing the row's interior taps.
        let mut taps: SmallVec<[(usize, usize); 64]> = SmallVec::new();
        let inner = 0..win.inner.len();
        taps.extend_from_slice(&win.inner);
        let mut tiles: SmallVec<[DwTile; 16]> = SmallVec::new();
        let mut edge = SmallVec::new();
        let mut ox = j.ox0;
        while ox < j.ox1 {
            let (t, x0, r) = win.at(ox, j.ox1, 0, &mut edge);
            let range = if r > 1 || win.is_inner(ox) {
                inner.clone()
            } else {
                let at = taps.len();
                taps.extend_from_slice(t);
                at..taps.len()
            };
            tiles.push((ox, r, x0, range));
            ox += r;
        }
        for cb in blocks {
            let plane = (j.img * g.cb + cb) * ih * iw * BLOCK;
            let wb = cb * kh * kw * BLOCK;
            for (ox, r, x0, range) in &tiles {
                let y0 = j.y_at(cb, *ox);
                // SAFETY: every tap reads 16 lanes of an input row and column inside the plane
                // of block cb (rows and columns were checked against the input when the tiles
                // were laid out, and for interior pixels by `valid_range`), r pixels at stride
                // sw·16 stay interior; the weights hold Mb blocks of kh·kw·16; y0 (z alike) is
                // this task's own span.
                unsafe {
                    depthwise_tile_dispatch(
                        &taps[range.clone()],
                        sw * BLOCK,
                        *r,
                        j.x.as_ptr().add(plane + x0),
                        w.as_ptr().add(wb),
                        b.as_ptr().add(cb * BLOCK),
                        j.out.0.add(y0),
                        j.z.map(|z| z.as_ptr().add(y0)),
                        clamp.unwrap_or(NO_CLAMP),
                    );
                }
            }
            if clamp.is_none() && !self.tail.is_empty() {
                let i = j.y_at(cb, j.ox0);
                // SAFETY: this task's span of its row, written above by it alone.
                let s = unsafe { std::slice::from_raw_parts_mut(j.out.0.add(i), (j.ox1 - j.ox0) * BLOCK) };
                self.tail.activate(s);
            }
        }
    }
}

/// A depthwise tile of a row: first pixel, width, input offset from the plane, and the range
/// of its taps in the row's tap list.
type DwTile = (usize, usize, usize, std::ops::Range<usize>);

/// One task: a span of output pixels of one row of one image.
struct Job<'a> {
    g: &'a Geo,
    x: &'a [f32],
    z: Option<&'a [f32]>,
    img: usize,
    oy: usize,
    ox0: usize,
    ox1: usize,
    out: Out,
}

impl Job<'_> {
    /// Index in the output of block `b`'s pixel `(oy, ox)`.
    fn y_at(&self, b: usize, ox: usize) -> usize {
        let g = self.g;
        (((self.img * g.mb + b) * g.o[0] + self.oy) * g.o[1] + ox) * BLOCK
    }
}
