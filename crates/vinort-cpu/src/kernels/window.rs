//! Window geometry, parsed and computed once for every windowed op: Conv, ConvTranspose,
//! DeformConv, the pools, ConvInteger and QLinearConv. [`WindowAttrs`] reads `kernel_shape`,
//! `strides`, `dilations`, `pads` and `auto_pad` (with node-named errors); [`Window`] holds
//! them resolved for a spatial rank; [`Window::geometry`] is ONNX's output-extent rule.

use vinort_ir::{Error, Node, Result};

/// How padding is chosen (`auto_pad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

impl AutoPad {
    pub fn parse(node: &Node) -> Result<AutoPad> {
        let s = node.attr_or::<String>("auto_pad", "NOTSET".into())?;
        Ok(match s.as_str() {
            "NOTSET" | "" => AutoPad::NotSet,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            "VALID" => AutoPad::Valid,
            other => return Err(node.error(format!("unknown auto_pad '{other}'"))),
        })
    }
}

/// The window attributes shared by Conv, ConvTranspose and the pools, before the spatial rank
/// is known (kernel_shape may be absent until W is seen).
#[derive(Clone, Debug)]
pub(crate) struct WindowAttrs {
    pub kernel: Option<Vec<usize>>,
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub pads: Option<Vec<i64>>,
    pub auto_pad: AutoPad,
}

fn positive(node: &Node, name: &str) -> Result<Option<Vec<usize>>> {
    match node.attr::<Vec<i64>>(name)? {
        None => Ok(None),
        Some(v) => v
            .iter()
            .map(|x| usize::try_from(*x).ok().filter(|x| *x > 0))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| node.error(format!("attribute '{name}' must all be positive, got {v:?}"))),
    }
}

impl WindowAttrs {
    pub fn parse(node: &Node) -> Result<WindowAttrs> {
        let pads = node.attr::<Vec<i64>>("pads")?;
        if let Some(p) = &pads
            && p.iter().any(|x| *x < 0)
        {
            return Err(node.error(format!("attribute 'pads' must be non-negative, got {p:?}")));
        }
        Ok(WindowAttrs {
            kernel: positive(node, "kernel_shape")?,
            strides: positive(node, "strides")?,
            dilations: positive(node, "dilations")?,
            pads,
            auto_pad: AutoPad::parse(node)?,
        })
    }

    /// Resolves per-axis values for `rank` spatial axes, checking attribute lengths.
    pub fn resolve(&self, kernel: &[usize]) -> Result<Window> {
        let r = kernel.len();
        let fit = |name: &str, v: &Option<Vec<usize>>| -> Result<Vec<usize>> {
            match v {
                None => Ok(vec![1; r]),
                Some(v) if v.len() == r => Ok(v.clone()),
                Some(v) => Err(Error::invalid(format!("{name} has {} values for {r} spatial axes", v.len()))),
            }
        };
        let pads = match &self.pads {
            None => vec![0; 2 * r],
            Some(p) if p.len() == 2 * r => p.iter().map(|x| *x as usize).collect(),
            Some(p) => return Err(Error::invalid(format!("pads has {} values for {r} spatial axes", p.len()))),
        };
        Ok(Window {
            kernel: kernel.to_vec(),
            strides: fit("strides", &self.strides)?,
            dilations: fit("dilations", &self.dilations)?,
            pads,
            auto_pad: self.auto_pad,
        })
    }
}

/// Window attributes resolved for a known spatial rank.
#[derive(Clone, Debug)]
pub(crate) struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]` as in ONNX.
    pub pads: Vec<usize>,
    pub auto_pad: AutoPad,
}

/// Output extents and begin pads of a forward window op (Conv and the pools).
pub(crate) struct Geometry {
    pub out: Vec<usize>,
    pub pad_begin: Vec<usize>,
    pub pad_end: Vec<usize>,
}

impl Window {
    /// The ONNX output shape rule for Conv and the pools. `ceil_mode` rounds up, dropping a
    /// last window that would start inside the right padding (the spec's "sliding windows that
    /// would start in the right padded region are ignored"). With auto_pad, ceil and floor give
    /// the same extents (ceil(in/s) == floor((in-1)/s)+1), so ceil_mode does not matter there.
    pub fn geometry(&self, input: &[usize], ceil_mode: bool) -> Result<Geometry> {
        let r = self.kernel.len();
        let mut g = Geometry { out: vec![0; r], pad_begin: vec![0; r], pad_end: vec![0; r] };
        for (i, &inp) in input.iter().enumerate().take(r) {
            let (s, k, d) = (self.strides[i], self.kernel[i], self.dilations[i]);
            let ek = (k - 1)
                .checked_mul(d)
                .and_then(|x| x.checked_add(1))
                .ok_or_else(|| Error::invalid("kernel extent overflows"))?;
            match self.auto_pad {
                AutoPad::SameUpper | AutoPad::SameLower => {
                    let out = inp.div_ceil(s);
                    let total = ((out.max(1) - 1) * s + ek).saturating_sub(inp);
                    let small = total / 2;
                    let (b, e) = if self.auto_pad == AutoPad::SameUpper {
                        (small, total - small)
                    } else {
                        (total - small, small)
                    };
                    g.out[i] = out;
                    g.pad_begin[i] = b;
                    g.pad_end[i] = e;
                }
                AutoPad::Valid | AutoPad::NotSet => {
                    let (b, e) =
                        if self.auto_pad == AutoPad::Valid { (0, 0) } else { (self.pads[i], self.pads[i + r]) };
                    let padded = inp + b + e;
                    if padded < ek {
                        return Err(Error::invalid(format!(
                            "kernel extent {ek} on spatial axis {i} exceeds the padded input {padded}"
                        )));
                    }
                    let span = padded - ek;
                    // The spec's VALID rule, ceil((in - ek + 1) / s), equals the floor rule, so
                    // ceil_mode only matters with explicit pads.
                    let ceil_mode = ceil_mode && self.auto_pad == AutoPad::NotSet;
                    let mut out = if ceil_mode { span.div_ceil(s) + 1 } else { span / s + 1 };
                    if ceil_mode && (out - 1) * s >= inp + b {
                        out -= 1;
                    }
                    g.out[i] = out;
                    g.pad_begin[i] = b;
                    g.pad_end[i] = e;
                }
            }
        }
        Ok(g)
    }
}

/// Left-pads a per-axis list to three axes with `fill`, so 1-D, 2-D and 3-D windows share one
/// loop nest.
pub(crate) fn to3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut o = [fill; 3];
    let off = 3 - v.len();
    o[off..].copy_from_slice(v);
    o
}

/// The range of `o` in `0..out` for which `o * s + off` lies in `0..len`.
pub(crate) fn valid_range(out: usize, len: usize, s: usize, off: isize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let hi = if len as isize - off <= 0 { 0 } else { (len as isize - off + s - 1) / s };
    let hi = (hi as usize).min(out);
    let lo = (lo as usize).min(hi);
    (lo, hi)
}
