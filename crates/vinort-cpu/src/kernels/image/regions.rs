//! Region ops: [Col2Im](https://onnx.ai/onnx/operators/onnx__Col2Im.html) (18),
//! [CenterCropPad](https://onnx.ai/onnx/operators/onnx__CenterCropPad.html) (18, any type),
//! [RoiAlign](https://onnx.ai/onnx/operators/onnx__RoiAlign.html) (10, 16, 22) and
//! [NonMaxSuppression](https://onnx.ai/onnx/operators/onnx__NonMaxSuppression.html) (10, 11).
//! Float arithmetic is done in f64.

use vinort_ir::Values;
use vinort_ir::tensor::{numel, strides_of, unravel};
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{extent, need_float, store_acc};

use crate::kernel::{Kernel, MAX_OPSET, NodeInfo, Registry, index_below, norm_axis, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.add("", "Col2Im", 18..=MAX_OPSET, col2im_factory);
    r.op("", "CenterCropPad", center_crop_pad_factory);
    r.op("", "RoiAlign", roi_align_factory);
    r.op("", "NonMaxSuppression", nms_factory);
}

struct Col2Im {
    strides: Option<Vec<i64>>,
    pads: Option<Vec<i64>>,
    dilations: Option<Vec<i64>>,
}

fn col2im_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    Ok(Box::new(Col2Im {
        strides: n.attr::<Vec<i64>>("strides")?,
        pads: n.attr::<Vec<i64>>("pads")?,
        dilations: n.attr::<Vec<i64>>("dilations")?,
    }))
}

impl Kernel for Col2Im {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        need_float(x, "Col2Im input")?;
        let img = tensor_in(inputs, 1)?.to_i64_vec()?;
        let blk = tensor_in(inputs, 2)?.to_i64_vec()?;
        let k = img.len();
        let bad = |m: String| Error::invalid(format!("Col2Im: {m}"));
        if blk.len() != k || k == 0 {
            return Err(bad(format!("image_shape {img:?} and block_shape {blk:?} differ in length")));
        }
        let get = |v: &Option<Vec<i64>>, len: usize, def: i64, what: &str| -> Result<Vec<i64>> {
            match v {
                Some(v) if v.len() == len => Ok(v.clone()),
                Some(v) => Err(bad(format!("{what} has {} values, expected {len}", v.len()))),
                None => Ok(vec![def; len]),
            }
        };
        let st = get(&self.strides, k, 1, "strides")?;
        let dil = get(&self.dilations, k, 1, "dilations")?;
        let pads = get(&self.pads, 2 * k, 0, "pads")?;
        let xs = x.shape();
        if xs.len() != 3 {
            return Err(bad(format!("input must be rank 3, got {xs:?}")));
        }
        let bprod: i64 = blk.iter().product();
        if bprod <= 0 || xs[1] as i64 % bprod != 0 {
            return Err(bad(format!("input channels {} are not a multiple of the block size {bprod}", xs[1])));
        }
        let (n, c, l) = (xs[0], xs[1] / bprod as usize, xs[2]);
        // Blocks along each axis.
        let mut nb = vec![0i64; k];
        for d in 0..k {
            let eff = dil[d] * (blk[d] - 1) + 1;
            if st[d] <= 0 {
                return Err(bad("strides must be positive".into()));
            }
            nb[d] = (img[d] + pads[d] + pads[k + d] - eff).div_euclid(st[d]) + 1;
        }
        if nb.iter().any(|v| *v <= 0) || nb.iter().product::<i64>() != l as i64 {
            return Err(bad(format!("{l} columns do not match {nb:?} blocks")));
        }
        let img_u: Vec<usize> = img.iter().map(|v| extent(*v, "image_shape")).collect::<Result<_>>()?;
        let blk_u: Vec<usize> = blk.iter().map(|v| extent(*v, "block_shape")).collect::<Result<_>>()?;
        let nb_u: Vec<usize> = nb.iter().map(|v| *v as usize).collect();
        let pimg = numel(&img_u);
        let xv = x.to_f64_vec()?;
        let mut y = crate::kernels::shape::copy::zeroed::<f64>(&[n, c, pimg])?;
        let ist = strides_of(&img_u);
        let bp = bprod as usize;
        for b in 0..n {
            for ch in 0..c {
                let dst = &mut y[(b * c + ch) * pimg..(b * c + ch + 1) * pimg];
                for bo in 0..bp {
                    let boff = unravel(bo, &blk_u);
                    let row = &xv[((b * c + ch) * bp + bo) * l..][..l];
                    for (li, v) in row.iter().enumerate() {
                        let bpos = unravel(li, &nb_u);
                        let mut off = 0usize;
                        let mut inside = true;
                        for d in 0..k {
                            let p = bpos[d] as i64 * st[d] - pads[d] + boff[d] as i64 * dil[d];
                            if p < 0 || p >= img[d] {
                                inside = false;
                                break;
                            }
                            off += p as usize * ist[d];
                        }
                        if inside {
                            dst[off] += *v;
                        }
                    }
                }
            }
        }
        let mut shape = vec![n, c];
        shape.extend_from_slice(&img_u);
        Ok(smallvec::smallvec![Value::Tensor(store_acc(x.dtype(), &shape, &y)?)])
    }
}

struct CenterCropPad {
    axes: Option<Vec<i64>>,
}

fn center_crop_pad_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(CenterCropPad { axes: info.node.attr::<Vec<i64>>("axes")? }))
}

impl Kernel for CenterCropPad {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let shape = tensor_in(inputs, 1)?.to_i64_vec()?;
        let r = x.rank();
        let axes: Vec<usize> = match &self.axes {
            Some(a) => a.iter().map(|a| norm_axis(*a, r)).collect::<Result<_>>()?,
            None => (0..r).collect(),
        };
        if axes.len() != shape.len() {
            return Err(Error::invalid(format!(
                "CenterCropPad: shape has {} values for {} axes",
                shape.len(),
                axes.len()
            )));
        }
        let ins = x.shape();
        let mut outs = ins.to_vec();
        // Per axis: first input index read, first output index written, and the common length.
        let mut src0 = vec![0usize; r];
        let mut dst0 = vec![0usize; r];
        for (&a, &s) in axes.iter().zip(&shape) {
            let s = extent(s, "shape")?;
            outs[a] = s;
            if s < ins[a] {
                src0[a] = (ins[a] - s) / 2;
            } else {
                dst0[a] = (s - ins[a]) / 2;
            }
        }
        let common: Vec<usize> = (0..r).map(|a| ins[a].min(outs[a])).collect();
        let y = if x.dtype() == DType::String {
            let src = x.as_strings()?;
            let mut out = vec![String::new(); numel(&outs)];
            copy_box(src, ins, &mut out, &outs, &src0, &dst0, &common);
            Tensor::from_strings(&outs, out)?
        } else {
            let es = x.dtype().size();
            let src = x.as_bytes();
            Tensor::build_raw(x.dtype(), &outs, |o| {
                let scale = |v: &[usize]| -> Vec<usize> {
                    let mut v = v.to_vec();
                    if let Some(l) = v.last_mut() {
                        *l *= es;
                    }
                    v
                };
                if r == 0 {
                    o.copy_from_slice(src);
                } else {
                    copy_box(src, &scale(ins), o, &scale(&outs), &scale(&src0), &scale(&dst0), &scale(&common));
                }
            })?
        };
        Ok(smallvec::smallvec![Value::Tensor(y)])
    }
}

/// Copies the box of extent `common` starting at `src0` in `src` (shape `ins`) to `dst0` in
/// `dst` (shape `outs`).
fn copy_box<T: Clone>(
    src: &[T],
    ins: &[usize],
    dst: &mut [T],
    outs: &[usize],
    src0: &[usize],
    dst0: &[usize],
    common: &[usize],
) {
    let r = ins.len();
    if r == 0 || common.contains(&0) {
        if r == 0 && !src.is_empty() && !dst.is_empty() {
            dst[0] = src[0].clone();
        }
        return;
    }
    let (ist, ost) = (strides_of(ins), strides_of(outs));
    let rows = numel(&common[..r - 1]);
    let run = common[r - 1];
    for row in 0..rows {
        let idx = unravel(row, &common[..r - 1]);
        let mut so = src0[r - 1];
        let mut d = dst0[r - 1];
        for a in 0..r - 1 {
            so += (idx[a] + src0[a]) * ist[a];
            d += (idx[a] + dst0[a]) * ost[a];
        }
        dst[d..d + run].clone_from_slice(&src[so..so + run]);
    }
}

struct RoiAlign {
    half_pixel: bool,
    max: bool,
    oh: usize,
    ow: usize,
    sampling_ratio: i64,
    spatial_scale: f64,
}

fn roi_align_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let default = if n.opset >= 16 { "half_pixel" } else { "output_half_pixel" };
    let half_pixel = n.choice_attr(
        "coordinate_transformation_mode",
        Some(default),
        &[("half_pixel", true), ("output_half_pixel", false)],
    )?;
    let max = n.choice_attr("mode", Some("avg"), &[("avg", false), ("max", true)])?;
    Ok(Box::new(RoiAlign {
        half_pixel,
        max,
        oh: extent(n.attr_or::<i64>("output_height", 1)?, "output_height")?,
        ow: extent(n.attr_or::<i64>("output_width", 1)?, "output_width")?,
        sampling_ratio: n.attr_or::<i64>("sampling_ratio", 0)?,
        spatial_scale: n.attr_or::<f32>("spatial_scale", 1.0)? as f64,
    }))
}

/// One bilinear sample: four flat positions and their weights.
type Sample = ([usize; 4], [f64; 4]);

impl RoiAlign {
    /// The two neighbouring indices of coordinate `v` (at least -1) on an axis of extent `len`
    /// and the weight of the upper one; at or past the last index both are the last index.
    fn neighbours(v: f64, len: usize) -> (usize, usize, f64) {
        let v = v.max(0.0);
        let lo = v as usize;
        if lo >= len - 1 { (len - 1, len - 1, 0.0) } else { (lo, lo + 1, v - lo as f64) }
    }

    fn sample(y: f64, x: f64, h: usize, w: usize) -> Sample {
        if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
            return ([0; 4], [0.0; 4]);
        }
        let ((yl, yh, ly), (xl, xh, lx)) = (Self::neighbours(y, h), Self::neighbours(x, w));
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        ([yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh], [hy * hx, hy * lx, ly * hx, ly * lx])
    }
}

impl Kernel for RoiAlign {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let rois = tensor_in(inputs, 1)?;
        need_float(x, "RoiAlign X")?;
        let bi = tensor_in(inputs, 2)?.to_i64_vec()?;
        let (xs, rs) = (x.shape(), rois.shape());
        if xs.len() != 4 || rs.len() != 2 || rs[1] != 4 || rs[0] != bi.len() {
            return Err(Error::invalid(format!("RoiAlign: X {xs:?}, rois {rs:?}, {} batch indices", bi.len())));
        }
        let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
        let (oh, ow) = (self.oh, self.ow);
        let xv = x.to_f64_vec()?;
        let rv = rois.to_f64_vec()?;
        let nr = rs[0];
        let mut y = crate::kernels::shape::copy::zeroed::<f64>(&[nr, c, oh, ow])?;
        let off = if self.half_pixel { 0.5 } else { 0.0 };
        for r in 0..nr {
            let b = index_below(bi[r], n).ok_or_else(|| {
                Error::invalid(format!("RoiAlign: batch index {} out of range for {n} images", bi[r]))
            })?;
            if h == 0 || w == 0 {
                continue;
            }
            let roi = &rv[r * 4..r * 4 + 4];
            let (sw, sh) = (roi[0] * self.spatial_scale - off, roi[1] * self.spatial_scale - off);
            let (ew, eh) = (roi[2] * self.spatial_scale - off, roi[3] * self.spatial_scale - off);
            let (mut rw, mut rh) = (ew - sw, eh - sh);
            if !self.half_pixel {
                rw = rw.max(1.0);
                rh = rh.max(1.0);
            }
            let (bh, bw) = (rh / oh as f64, rw / ow as f64);
            let gh =
                if self.sampling_ratio > 0 { self.sampling_ratio as usize } else { (rh / oh as f64).ceil() as usize };
            let gw =
                if self.sampling_ratio > 0 { self.sampling_ratio as usize } else { (rw / ow as f64).ceil() as usize };
            let count = (gh * gw).max(1) as f64;
            let mut samples: Vec<Sample> = Vec::with_capacity(oh * ow * gh * gw);
            for ph in 0..oh {
                for pw in 0..ow {
                    for iy in 0..gh {
                        let yy = sh + ph as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                        for ix in 0..gw {
                            let xx = sw + pw as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                            samples.push(Self::sample(yy, xx, h, w));
                        }
                    }
                }
            }
            let per = gh * gw;
            for ch in 0..c {
                let plane = &xv[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                let out = &mut y[(r * c + ch) * oh * ow..(r * c + ch + 1) * oh * ow];
                for (o, v) in out.iter_mut().enumerate() {
                    let ss = &samples[o * per..(o + 1) * per];
                    if self.max {
                        let mut m: Option<f64> = None;
                        for (p, wt) in ss {
                            let s = (0..4).map(|k| wt[k] * plane[p[k]]).fold(f64::NEG_INFINITY, f64::max);
                            m = Some(m.map_or(s, |m| m.max(s)));
                        }
                        *v = m.unwrap_or(0.0);
                    } else {
                        let s: f64 = ss.iter().map(|(p, wt)| (0..4).map(|k| wt[k] * plane[p[k]]).sum::<f64>()).sum();
                        *v = s / count;
                    }
                }
            }
        }
        Ok(smallvec::smallvec![Value::Tensor(store_acc(x.dtype(), &[nr, c, oh, ow], &y)?)])
    }
}

struct Nms {
    center_point_box: bool,
}

fn nms_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(Nms { center_point_box: info.node.attr_or::<i64>("center_point_box", 0)? != 0 }))
}

impl Nms {
    /// A box as (x_min, y_min, x_max, y_max).
    fn corners(&self, b: &[f64]) -> [f64; 4] {
        if self.center_point_box {
            let (hw, hh) = (b[2] / 2.0, b[3] / 2.0);
            [b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh]
        } else {
            [b[1].min(b[3]), b[0].min(b[2]), b[1].max(b[3]), b[0].max(b[2])]
        }
    }

    /// True when `a` and `b` overlap by more than `thr` IoU.
    fn suppresses(a: &[f64; 4], b: &[f64; 4], thr: f64) -> bool {
        let (ix0, ix1) = (a[0].max(b[0]), a[2].min(b[2]));
        let (iy0, iy1) = (a[1].max(b[1]), a[3].min(b[3]));
        if ix1 <= ix0 || iy1 <= iy0 {
            return false;
        }
        let inter = (ix1 - ix0) * (iy1 - iy0);
        let aa = (a[2] - a[0]) * (a[3] - a[1]);
        let ab = (b[2] - b[0]) * (b[3] - b[1]);
        let union = aa + ab - inter;
        if inter <= 0.0 || aa <= 0.0 || ab <= 0.0 || union <= 0.0 {
            return false;
        }
        inter / union > thr
    }
}

impl Kernel for Nms {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let boxes = tensor_in(inputs, 0)?;
        let scores = tensor_in(inputs, 1)?;
        let first_f = |i: usize| -> Result<Option<f64>> {
            Ok(opt_tensor_in(inputs, i)?.filter(|t| !t.is_empty()).map(|t| t.to_f64_vec()).transpose()?.map(|v| v[0]))
        };
        let max_out = match opt_tensor_in(inputs, 2)?.filter(|t| !t.is_empty()) {
            Some(t) => t.to_i64_vec()?[0].max(0) as usize,
            None => 0,
        };
        let iou = first_f(3)?.unwrap_or(0.0);
        let score_thr = first_f(4)?;
        let (bs, ss) = (boxes.shape(), scores.shape());
        if bs.len() != 3 || bs[2] != 4 || ss.len() != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
            return Err(Error::invalid(format!("NonMaxSuppression: boxes {bs:?} and scores {ss:?} do not match")));
        }
        let (nb, nc, n) = (ss[0], ss[1], ss[2]);
        let bv = boxes.to_f64_vec()?;
        let sv = scores.to_f64_vec()?;
        let mut sel: Vec<i64> = Vec::new();
        for b in 0..nb {
            let corners: Vec<[f64; 4]> = (0..n).map(|i| self.corners(&bv[(b * n + i) * 4..][..4])).collect();
            for c in 0..nc {
                let s = &sv[(b * nc + c) * n..][..n];
                let mut cand: Vec<usize> = (0..n).filter(|&i| score_thr.is_none_or(|t| s[i] > t)).collect();
                // Highest score first; ties keep the lower index first.
                cand.sort_by(|&i, &j| s[j].total_cmp(&s[i]).then(i.cmp(&j)));
                let mut kept: Vec<usize> = Vec::new();
                for i in cand {
                    if kept.len() >= max_out {
                        break;
                    }
                    if kept.iter().all(|&k| !Self::suppresses(&corners[i], &corners[k], iou)) {
                        kept.push(i);
                        sel.extend_from_slice(&[b as i64, c as i64, i as i64]);
                    }
                }
            }
        }
        let rows = sel.len() / 3;
        Ok(smallvec::smallvec![Value::Tensor(Tensor::from_vec(&[rows, 3], sel)?)])
    }
}
