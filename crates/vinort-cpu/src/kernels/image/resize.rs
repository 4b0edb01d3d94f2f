//! [Resize](https://onnx.ai/onnx/operators/onnx__Resize.html) (opsets 10, 11, 13, 18, 19) and
//! the deprecated [Upsample](https://onnx.ai/onnx/operators/onnx__Upsample.html) (7, 9).
//!
//! Resizing is separable: every resized axis is resampled on its own, one pass per axis, each
//! output position reading a few input positions with precomputed weights. `nearest` is a pure
//! gather and works for every element type; `linear` and `cubic` (with or without antialiasing)
//! interpolate in f32, or f64 for f64 data, and round integers half to even with saturation.
//!
//! Output extents from `scales` are `floor(input * scale)` (as ONNX's reference and ONNX Runtime
//! compute them; the `roi` extent factor the spec text mentions is not applied). Before opset 11
//! (and for Upsample) coordinates are `asymmetric` and nearest uses ONNX Runtime's rule: floor
//! when upsampling, ceil when downsampling.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::resample::Taps;
use super::{Acc, extent};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Resize", resize_factory);
    r.add("", "Upsample", 7..=10, upsample_factory);
}

/// Interpolation mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Nearest,
    Linear,
    Cubic,
}

/// How an output coordinate maps to an input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctm {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize,
}

/// How a fractional coordinate picks the nearest pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nearest {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
    /// Opset < 11: floor when upsampling, ceil when downsampling.
    Simple,
}

/// How `sizes` treats the aspect ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    Stretch,
    NotLarger,
    NotSmaller,
}

/// Resize attributes, parsed.
#[derive(Clone, Debug)]
pub(crate) struct Resize {
    pub mode: Mode,
    pub ctm: Ctm,
    pub nearest: Nearest,
    pub cubic_a: f64,
    pub exclude_outside: bool,
    pub extrapolation: f64,
    pub antialias: bool,
    pub axes: Option<Vec<i64>>,
    pub policy: Policy,
    /// Input positions of roi, scales and sizes (None when the opset has no such input).
    pub roi_in: Option<usize>,
    pub scales_in: Option<usize>,
    pub sizes_in: Option<usize>,
    /// Upsample-7's `scales` attribute.
    pub attr_scales: Option<Vec<f32>>,
}

fn parse_mode(n: &vinort_ir::Node) -> Result<Mode> {
    match n.attr_or::<String>("mode", "nearest".into())?.as_str() {
        "nearest" => Ok(Mode::Nearest),
        "linear" | "bilinear" | "trilinear" => Ok(Mode::Linear),
        "cubic" | "bicubic" => Ok(Mode::Cubic),
        m => Err(n.error(format!("unknown mode '{m}'"))),
    }
}

impl Resize {
    /// The legacy behaviour of Resize-10 and Upsample.
    fn legacy(mode: Mode) -> Resize {
        Resize {
            mode,
            ctm: Ctm::Asymmetric,
            nearest: Nearest::Simple,
            cubic_a: -0.75,
            exclude_outside: false,
            extrapolation: 0.0,
            antialias: false,
            axes: None,
            policy: Policy::Stretch,
            roi_in: None,
            scales_in: Some(1),
            sizes_in: None,
            attr_scales: None,
        }
    }
}

fn resize_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let mode = parse_mode(n)?;
    if n.opset < 11 {
        if mode == Mode::Cubic {
            return Err(n.error("mode 'cubic' needs opset 11"));
        }
        return Ok(Box::new(Resize::legacy(mode)));
    }
    let ctm = match n.attr_or::<String>("coordinate_transformation_mode", "half_pixel".into())?.as_str() {
        "half_pixel" => Ctm::HalfPixel,
        "half_pixel_symmetric" => Ctm::HalfPixelSymmetric,
        "pytorch_half_pixel" => Ctm::PytorchHalfPixel,
        "align_corners" => Ctm::AlignCorners,
        "asymmetric" => Ctm::Asymmetric,
        "tf_half_pixel_for_nn" => Ctm::TfHalfPixelForNn,
        "tf_crop_and_resize" => Ctm::TfCropAndResize,
        m => return Err(n.error(format!("unknown coordinate_transformation_mode '{m}'"))),
    };
    let nearest = match n.attr_or::<String>("nearest_mode", "round_prefer_floor".into())?.as_str() {
        "round_prefer_floor" => Nearest::RoundPreferFloor,
        "round_prefer_ceil" => Nearest::RoundPreferCeil,
        "floor" => Nearest::Floor,
        "ceil" => Nearest::Ceil,
        m => return Err(n.error(format!("unknown nearest_mode '{m}'"))),
    };
    let policy = match n.attr_or::<String>("keep_aspect_ratio_policy", "stretch".into())?.as_str() {
        "stretch" => Policy::Stretch,
        "not_larger" => Policy::NotLarger,
        "not_smaller" => Policy::NotSmaller,
        m => return Err(n.error(format!("unknown keep_aspect_ratio_policy '{m}'"))),
    };
    Ok(Box::new(Resize {
        mode,
        ctm,
        nearest,
        cubic_a: n.attr_or::<f32>("cubic_coeff_a", -0.75)? as f64,
        exclude_outside: n.attr_or::<i64>("exclude_outside", 0)? != 0,
        extrapolation: n.attr_or::<f32>("extrapolation_value", 0.0)? as f64,
        antialias: n.attr_or::<i64>("antialias", 0)? != 0,
        axes: n.attr::<Vec<i64>>("axes")?,
        policy,
        roi_in: Some(1),
        scales_in: Some(2),
        sizes_in: Some(3),
        attr_scales: None,
    }))
}

fn upsample_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let mode = parse_mode(n)?;
    if mode == Mode::Cubic {
        return Err(n.error("Upsample has no cubic mode"));
    }
    let mut r = Resize::legacy(mode);
    if n.opset < 9 {
        r.scales_in = None;
        r.attr_scales = Some(n.req_attr::<Vec<f32>>("scales")?);
    }
    Ok(Box::new(r))
}

/// The geometry of one run: per-axis extents, scales and roi.
pub(crate) struct Plan {
    pub in_shape: Vec<usize>,
    pub out_shape: Vec<usize>,
    pub scales: Vec<f64>,
    pub roi: Option<Vec<(f64, f64)>>,
    /// Axes to resample, in order.
    pub axes: Vec<usize>,
}

impl Resize {
    /// Works out output extents and per-axis scales from roi / scales / sizes.
    pub(crate) fn plan(&self, in_shape: &[usize], inputs: &[Option<&Value>]) -> Result<Plan> {
        let r = in_shape.len();
        let get = |i: Option<usize>| -> Result<Option<&Tensor>> {
            match i {
                Some(i) => Ok(opt_tensor_in(inputs, i)?.filter(|t| !t.is_empty())),
                None => Ok(None),
            }
        };
        let axes: Vec<usize> = match &self.axes {
            Some(a) => a.iter().map(|a| norm_axis(*a, r)).collect::<Result<_>>()?,
            None => (0..r).collect(),
        };
        let roi_v = get(self.roi_in)?.map(|t| t.to_f64_vec()).transpose()?;
        let roi = match roi_v {
            Some(v) if self.ctm == Ctm::TfCropAndResize => {
                if v.len() != 2 * axes.len() {
                    return Err(Error::invalid(format!("roi has {} values, expected {}", v.len(), 2 * axes.len())));
                }
                let mut full = vec![(0.0, 1.0); r];
                for (i, &a) in axes.iter().enumerate() {
                    full[a] = (v[i], v[axes.len() + i]);
                }
                Some(full)
            }
            _ => None,
        };
        if self.ctm == Ctm::TfCropAndResize && roi.is_none() {
            return Err(Error::invalid("coordinate_transformation_mode tf_crop_and_resize needs roi"));
        }
        let mut scales = vec![1.0f64; r];
        let mut out_shape = in_shape.to_vec();
        let scales_v: Option<Vec<f64>> = match &self.attr_scales {
            Some(s) => Some(s.iter().map(|v| *v as f64).collect()),
            None => get(self.scales_in)?.map(|t| t.to_f64_vec()).transpose()?,
        };
        let sizes_v = get(self.sizes_in)?.map(|t| t.to_i64_vec()).transpose()?;
        if let Some(sizes) = sizes_v {
            if scales_v.is_some() {
                return Err(Error::invalid("only one of scales and sizes may be given"));
            }
            if sizes.len() != axes.len() {
                return Err(Error::invalid(format!("sizes has {} values for {} axes", sizes.len(), axes.len())));
            }
            let sizes: Vec<usize> = sizes.iter().map(|s| extent(*s, "sizes")).collect::<Result<_>>()?;
            let ratio = |i: usize| sizes[i] as f64 / in_shape[axes[i]] as f64;
            match self.policy {
                Policy::Stretch => {
                    for (i, &a) in axes.iter().enumerate() {
                        out_shape[a] = sizes[i];
                        scales[a] = ratio(i);
                    }
                }
                Policy::NotLarger | Policy::NotSmaller => {
                    let rs = (0..axes.len()).map(ratio);
                    let s = if self.policy == Policy::NotLarger {
                        rs.fold(f64::INFINITY, f64::min)
                    } else {
                        rs.fold(f64::NEG_INFINITY, f64::max)
                    };
                    for &a in &axes {
                        scales[a] = s;
                        out_shape[a] = (s * in_shape[a] as f64 + 0.5).floor() as usize;
                    }
                }
            }
        } else if let Some(sc) = scales_v {
            // Before opset 18 `scales` always covers every axis.
            let ax: &[usize] = if sc.len() == r && self.axes.is_none() { &[] } else { &axes };
            if !ax.is_empty() && sc.len() != ax.len() || ax.is_empty() && sc.len() != r {
                return Err(Error::invalid(format!("scales has {} values for rank {r}", sc.len())));
            }
            for i in 0..sc.len() {
                let a = if ax.is_empty() { i } else { ax[i] };
                if sc[i].is_nan() || sc[i] <= 0.0 {
                    return Err(Error::invalid(format!("scale {} must be positive", sc[i])));
                }
                scales[a] = sc[i];
                out_shape[a] = (sc[i] * in_shape[a] as f64).floor() as usize;
            }
        } else {
            return Err(Error::invalid("Resize needs scales or sizes"));
        }
        // Axes left unchanged (scale 1, same extent, whole roi) are skipped.
        let axes = (0..r)
            .filter(|&a| {
                let roi_id = roi.as_ref().is_none_or(|v| (v[a].0).abs() < 1e-9 && (v[a].1 - 1.0).abs() < 1e-9);
                !((scales[a] - 1.0).abs() < 1e-9 && out_shape[a] == in_shape[a] && roi_id)
            })
            .collect();
        // Scales and sizes are the model's values: the output must fit before any map of it
        // is built.
        crate::kernels::shape::copy::checked_numel(&out_shape)?;
        Ok(Plan { in_shape: in_shape.to_vec(), out_shape, scales, roi, axes })
    }

    /// The input coordinate of output position `y` along an axis.
    fn source(&self, y: usize, scale: f64, len_in: usize, len_out: usize, roi: (f64, f64)) -> f64 {
        let y = y as f64;
        let (li, lo) = (len_in as f64, scale * len_in as f64);
        match self.ctm {
            Ctm::HalfPixel => (y + 0.5) / scale - 0.5,
            Ctm::HalfPixelSymmetric => {
                let adjustment = len_out as f64 / lo;
                let offset = li / 2.0 * (1.0 - adjustment);
                offset + (y + 0.5) / scale - 0.5
            }
            Ctm::PytorchHalfPixel => {
                if lo == 1.0 {
                    -0.5
                } else {
                    (y + 0.5) / scale - 0.5
                }
            }
            Ctm::AlignCorners => {
                if lo == 1.0 {
                    0.0
                } else {
                    y * (li - 1.0) / (lo - 1.0)
                }
            }
            Ctm::Asymmetric => y / scale,
            Ctm::TfHalfPixelForNn => (y + 0.5) / scale,
            Ctm::TfCropAndResize => {
                let x = if lo == 1.0 {
                    (roi.1 - roi.0) * (li - 1.0) / 2.0
                } else {
                    y * (roi.1 - roi.0) * (li - 1.0) / (lo - 1.0)
                };
                x + roi.0 * (li - 1.0)
            }
        }
    }

    fn extrapolated(&self, x: f64, len_in: usize) -> bool {
        self.ctm == Ctm::TfCropAndResize && (x < 0.0 || x > len_in as f64 - 1.0)
    }

    /// For nearest: the input index of each output position of an axis (None: extrapolate).
    pub(crate) fn nearest_map(&self, p: &Plan, a: usize) -> Vec<Option<usize>> {
        let (li, lo, s) = (p.in_shape[a], p.out_shape[a], p.scales[a]);
        let roi = p.roi.as_ref().map_or((0.0, 1.0), |r| r[a]);
        (0..lo)
            .map(|y| {
                let x = self.source(y, s, li, lo, roi);
                if self.extrapolated(x, li) {
                    return None;
                }
                let f = x.floor();
                let i = if x == f {
                    x
                } else {
                    match self.nearest {
                        Nearest::RoundPreferFloor => {
                            if x - f <= 0.5 {
                                f
                            } else {
                                f + 1.0
                            }
                        }
                        Nearest::RoundPreferCeil => {
                            if x - f < 0.5 {
                                f
                            } else {
                                f + 1.0
                            }
                        }
                        Nearest::Floor => f,
                        Nearest::Ceil => f + 1.0,
                        Nearest::Simple => {
                            if s < 1.0 {
                                x.ceil()
                            } else {
                                x.trunc()
                            }
                        }
                    }
                };
                Some(i.clamp(0.0, li.saturating_sub(1) as f64) as usize)
            })
            .collect()
    }

    /// The filter at distance `d` (in filter units) for linear / cubic.
    fn filter(&self, d: f64) -> f64 {
        let d = d.abs();
        match self.mode {
            Mode::Linear => (1.0 - d).max(0.0),
            _ => {
                let a = self.cubic_a;
                if d <= 1.0 {
                    ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
                } else if d < 2.0 {
                    ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
                } else {
                    0.0
                }
            }
        }
    }

    /// For linear / cubic: the taps of an axis.
    pub(crate) fn taps<A: Acc>(&self, p: &Plan, a: usize) -> Taps<A> {
        let (li, lo, s) = (p.in_shape[a], p.out_shape[a], p.scales[a]);
        let roi = p.roi.as_ref().map_or((0.0, 1.0), |r| r[a]);
        let radius = if self.mode == Mode::Linear { 1.0 } else { 2.0 };
        // Antialiasing stretches the filter by 1/scale when downsampling.
        let fs = if self.antialias { s.min(1.0) } else { 1.0 };
        // A filter wider than the input reaches every pixel whatever its width: capped there,
        // so a tiny antialiased scale (1e-30) cannot ask for a 2^60-tap filter.
        let reach = (radius / fs).min(li as f64 + radius);
        let start = (-reach).floor() as i64 + 1;
        let n = (2 - 2 * start) as usize;
        let cap = lo.saturating_mul(n).min(1 << 24);
        let mut t = Taps { n, idx: Vec::with_capacity(cap), w: Vec::with_capacity(cap), skip: vec![false; lo] };
        let mut w = vec![0.0f64; n];
        for y in 0..lo {
            let x = self.source(y, s, li, lo, roi);
            t.skip[y] = self.extrapolated(x, li);
            // The window leans left: an exact integer x sits at ratio 1 of the pixel before it.
            let fl = x.floor();
            let base = if x == fl { fl as i64 - 1 } else { fl as i64 };
            let ratio = x - base as f64;
            for (k, w) in w.iter_mut().enumerate() {
                *w = self.filter((k as i64 + start) as f64 * fs - ratio * fs);
            }
            if self.exclude_outside {
                for (k, w) in w.iter_mut().enumerate() {
                    let pos = base + start + k as i64;
                    if pos < 0 || pos >= li as i64 {
                        *w = 0.0;
                    }
                }
            }
            if self.antialias || self.exclude_outside {
                let sum: f64 = w.iter().sum();
                if sum != 0.0 {
                    w.iter_mut().for_each(|v| *v /= sum);
                }
            }
            for (k, w) in w.iter().enumerate() {
                let pos = (base + start + k as i64).clamp(0, li as i64 - 1).max(0) as usize;
                t.idx.push(pos);
                t.w.push(A::from_f64(*w));
            }
        }
        t
    }
}

impl Kernel for Resize {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let p = self.plan(x.shape(), inputs)?;
        if p.in_shape.iter().zip(&p.out_shape).any(|(i, o)| *i == 0 && *o != 0) {
            return Err(Error::invalid("cannot resize an empty axis to a non-empty one"));
        }
        // An empty output may still have a huge axis: no coordinate map is made for it.
        if p.out_shape.contains(&0) {
            return Ok(smallvec::smallvec![Value::Tensor(Tensor::zeros(x.dtype(), &p.out_shape))]);
        }
        let y = if self.mode == Mode::Nearest {
            self.run_nearest(x, &p)?
        } else if x.dtype() == DType::F64 {
            self.run_interp::<f64>(x, &p)?
        } else {
            self.run_interp::<f32>(x, &p)?
        };
        Ok(smallvec::smallvec![Value::Tensor(y)])
    }
}
