//! Sliding-window geometry shared by Conv, ConvTranspose, DeformConv, ConvInteger,
//! QLinearConv and the pools: the `kernel_shape`, `strides`, `dilations`, `pads`, `auto_pad`
//! and `ceil_mode` attributes, parsed once with errors that name the node, and the ONNX output
//! size rule ([Conv](https://onnx.ai/onnx/operators/onnx__Conv.html),
//! [MaxPool](https://onnx.ai/onnx/operators/onnx__MaxPool.html)).
//!
//! Shape inference, the Cpu kernels and the OpenVINO semantic rules all read windows through
//! this module, so a spec subtlety (ceil mode dropping a window that starts in the end padding,
//! SAME padding putting the odd pixel at the end) is written down once.

use crate::error::{Error, Result};
use crate::graph::Node;

/// How padding is chosen (`auto_pad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPad {
    /// Explicit `pads`.
    NotSet,
    /// Output size `ceil(in / stride)`, the odd padding pixel at the end.
    SameUpper,
    /// Output size `ceil(in / stride)`, the odd padding pixel at the beginning.
    SameLower,
    /// No padding.
    Valid,
}

impl AutoPad {
    /// The node's `auto_pad` (default `NOTSET`).
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

/// The window attributes of a node before the spatial rank is known (`kernel_shape` may be
/// absent until the weight's shape is seen).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowAttrs {
    /// `kernel_shape`.
    pub kernel: Option<Vec<usize>>,
    /// `strides` (each > 0).
    pub strides: Option<Vec<usize>>,
    /// `dilations` (each > 0).
    pub dilations: Option<Vec<usize>>,
    /// `pads` (each >= 0), begins then ends.
    pub pads: Option<Vec<usize>>,
    /// `auto_pad`.
    pub auto_pad: AutoPad,
    /// `ceil_mode` (pools only; 0 elsewhere).
    pub ceil_mode: bool,
}

impl WindowAttrs {
    /// Reads and checks the window attributes of a node.
    pub fn parse(node: &Node) -> Result<WindowAttrs> {
        let pads = match node.attr::<Vec<i64>>("pads")? {
            Some(p) if p.iter().any(|x| *x < 0) => {
                return Err(node.error(format!("attribute 'pads' must be non-negative, got {p:?}")));
            }
            p => p.map(|p| p.into_iter().map(|x| x as usize).collect()),
        };
        Ok(WindowAttrs {
            kernel: positive(node, "kernel_shape")?,
            strides: positive(node, "strides")?,
            dilations: positive(node, "dilations")?,
            pads,
            auto_pad: AutoPad::parse(node)?,
            ceil_mode: node.attr_or::<i64>("ceil_mode", 0)? != 0,
        })
    }

    /// Per-axis values for the spatial axes of `kernel` (the node's `kernel_shape`, or the
    /// weight's spatial extents), checking every attribute's length.
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
            Some(p) if p.len() == 2 * r => p.clone(),
            Some(p) => return Err(Error::invalid(format!("pads has {} values for {r} spatial axes", p.len()))),
        };
        Ok(Window {
            kernel: kernel.to_vec(),
            strides: fit("strides", &self.strides)?,
            dilations: fit("dilations", &self.dilations)?,
            pads,
            auto_pad: self.auto_pad,
            ceil_mode: self.ceil_mode,
        })
    }
}

/// An integer-list attribute whose values must all be positive.
fn positive(node: &Node, name: &str) -> Result<Option<Vec<usize>>> {
    match node.attr::<Vec<i64>>(name)? {
        None => Ok(None),
        Some(v) if v.iter().all(|x| *x > 0) => Ok(Some(v.into_iter().map(|x| x as usize).collect())),
        Some(v) => Err(node.error(format!("attribute '{name}' must all be positive, got {v:?}"))),
    }
}

/// A window resolved for a known number of spatial axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Kernel extent per axis.
    pub kernel: Vec<usize>,
    /// Stride per axis.
    pub strides: Vec<usize>,
    /// Dilation per axis.
    pub dilations: Vec<usize>,
    /// `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]` as in ONNX.
    pub pads: Vec<usize>,
    /// How padding is chosen.
    pub auto_pad: AutoPad,
    /// Round output sizes up (pools).
    pub ceil_mode: bool,
}

/// Output extents and the padding actually applied on each spatial axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Output size per spatial axis.
    pub out: crate::Shape,
    /// Padding before the first element per axis.
    pub pad_begin: crate::Shape,
    /// Padding after the last element per axis.
    pub pad_end: crate::Shape,
}

impl Window {
    /// The ONNX output rule of a forward window op on one spatial axis: the output size and
    /// the padding applied. `ceil_mode` rounds up, dropping a last window that would start
    /// inside the end padding (the spec's "sliding windows that would start in the right
    /// padded region are ignored"). With auto_pad, ceil and floor give the same sizes
    /// (`ceil(in/s) == floor((in-1)/s)+1`), so ceil_mode only matters with explicit pads.
    pub fn axis(&self, i: usize, input: usize) -> Result<(usize, usize, usize)> {
        let r = self.kernel.len();
        let (s, k, d) = (self.strides[i], self.kernel[i], self.dilations[i]);
        let ek = (k.max(1) - 1)
            .checked_mul(d)
            .and_then(|x| x.checked_add(1))
            .ok_or_else(|| Error::invalid("kernel extent overflows"))?;
        Ok(match self.auto_pad {
            AutoPad::SameUpper | AutoPad::SameLower => {
                let out = input.div_ceil(s);
                let total = ((out.max(1) - 1) * s + ek).saturating_sub(input);
                let small = total / 2;
                if self.auto_pad == AutoPad::SameUpper {
                    (out, small, total - small)
                } else {
                    (out, total - small, small)
                }
            }
            AutoPad::Valid | AutoPad::NotSet => {
                let (b, e) = if self.auto_pad == AutoPad::Valid { (0, 0) } else { (self.pads[i], self.pads[i + r]) };
                let padded = input + b + e;
                if padded < ek {
                    return Err(Error::invalid(format!(
                        "kernel extent {ek} on spatial axis {i} exceeds the padded input {padded}"
                    )));
                }
                let span = padded - ek;
                // The spec's VALID rule, ceil((in - ek + 1) / s), equals the floor rule.
                let ceil = self.ceil_mode && self.auto_pad == AutoPad::NotSet;
                let mut out = if ceil { span.div_ceil(s) + 1 } else { span / s + 1 };
                if ceil && (out - 1) * s >= input + b {
                    out -= 1;
                }
                (out, b, e)
            }
        })
    }

    /// [`Window::axis`] for every spatial axis of `input` (the spatial extents only).
    pub fn geometry(&self, input: &[usize]) -> Result<Geometry> {
        let r = self.kernel.len();
        let zeros = || smallvec::smallvec![0; r];
        let mut g = Geometry { out: zeros(), pad_begin: zeros(), pad_end: zeros() };
        for (i, &len) in input.iter().enumerate().take(r) {
            (g.out[i], g.pad_begin[i], g.pad_end[i]) = self.axis(i, len)?;
        }
        Ok(g)
    }

    /// True when, in ceil mode with explicit pads, the last window on axis `i` starts inside
    /// the end padding: ONNX drops that window, which some runtimes keep.
    pub fn ceil_window_starts_in_end_pad(&self, i: usize, input: usize) -> bool {
        let r = self.kernel.len();
        if !self.ceil_mode || self.auto_pad != AutoPad::NotSet {
            return false;
        }
        let (s, b, e) = (self.strides[i], self.pads[i], self.pads[i + r]);
        let ek = (self.kernel[i].max(1) - 1) * self.dilations[i] + 1;
        let Some(span) = (input + b + e).checked_sub(ek) else {
            return false;
        };
        (span.div_ceil(s)) * s >= input + b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(k: usize, s: usize, pads: (usize, usize), auto_pad: AutoPad, ceil_mode: bool) -> Window {
        Window {
            kernel: vec![k],
            strides: vec![s],
            dilations: vec![1],
            pads: vec![pads.0, pads.1],
            auto_pad,
            ceil_mode,
        }
    }

    #[test]
    fn output_sizes_follow_the_spec() {
        // floor((5 + 2 - 3) / 2) + 1 = 3
        assert_eq!(window(3, 2, (1, 1), AutoPad::NotSet, false).axis(0, 5).unwrap(), (3, 1, 1));
        // SAME_UPPER: ceil(5 / 2) = 3, total pad (3-1)*2+3-5 = 2, split 1/1
        assert_eq!(window(3, 2, (0, 0), AutoPad::SameUpper, false).axis(0, 5).unwrap(), (3, 1, 1));
        // SAME with an odd total: the extra pixel goes to the end (upper) or start (lower).
        assert_eq!(window(2, 1, (0, 0), AutoPad::SameUpper, false).axis(0, 4).unwrap(), (4, 0, 1));
        assert_eq!(window(2, 1, (0, 0), AutoPad::SameLower, false).axis(0, 4).unwrap(), (4, 1, 0));
        assert_eq!(window(3, 1, (5, 5), AutoPad::Valid, false).axis(0, 5).unwrap(), (3, 0, 0));
        assert!(window(7, 1, (0, 0), AutoPad::NotSet, false).axis(0, 5).is_err());
    }

    #[test]
    fn ceil_mode_drops_a_window_starting_in_the_end_pad() {
        // in 4, k 2, s 2, pads (0, 1): span 3, ceil -> 3 windows, the third starts at 4 = in + 0.
        let w = window(2, 2, (0, 1), AutoPad::NotSet, true);
        assert_eq!(w.axis(0, 4).unwrap().0, 2);
        assert!(w.ceil_window_starts_in_end_pad(0, 4));
        // in 5, k 2, s 2, no pads: ceil gives 3, the third window starts at 4 < 5: kept.
        let w = window(2, 2, (0, 0), AutoPad::NotSet, true);
        assert_eq!(w.axis(0, 5).unwrap().0, 3);
        assert!(!w.ceil_window_starts_in_end_pad(0, 5));
    }
}
