//! Shape rules for the ops that move data without computing on it: Reshape, Transpose,
//! Concat, Flatten, Squeeze/Unsqueeze, Slice, Shape, Gather, ConstantOfShape and Expand. A
//! rank that run-time values cannot change is kept (OpenVINO refuses a boundary value of
//! unknown rank).

use super::InferCtx;
use super::rules::{Out, broadcast_dims, norm_axis, tensor};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::Node;
use crate::tensor::Tensor;
use crate::value::{Dim, ValueType};

pub(crate) fn reshape(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let Some(target) = c.const_ints(1) else {
        // The target is computed at run time (Shape -> Slice -> Concat chains), but its length
        // is the output's rank; OpenVINO cannot take a value of unknown rank across a boundary.
        return Ok(vec![tensor(c.dtype(0), c.len_1d(1).map(|r| vec![Dim::Unknown; r]))]);
    };
    let allowzero = n.attr_or::<i64>("allowzero", 0)? != 0;
    let x = c.shape(0);
    let mut out: Vec<Dim> = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, t) in target.iter().enumerate() {
        out.push(match *t {
            0 if !allowzero => match x.and_then(|x| x.get(i)) {
                Some(d) => d.clone(),
                None if x.is_some() => {
                    return Err(n.error(format!("shape[{i}] = 0 copies a dim the input does not have")));
                }
                None => Dim::Unknown,
            },
            -1 => {
                if infer_at.replace(i).is_some() {
                    return Err(n.error("more than one -1 in the target shape"));
                }
                Dim::Unknown
            }
            v if v < 0 => return Err(n.error(format!("invalid target dim {v}"))),
            v => Dim::Fixed(v as usize),
        });
    }
    if let (Some(at), Some(total)) = (infer_at, x.and_then(Dim::fixed_product)) {
        let others: Vec<Dim> = out.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, d)| d.clone()).collect();
        let known = Dim::fixed_product(&others);
        if let Some(k) = known {
            if k == 0 || total % k != 0 {
                return Err(n.error(format!("cannot infer -1: {total} elements over {k}")));
            }
            out[at] = Dim::Fixed(total / k);
        }
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn transpose(c: &InferCtx<'_>) -> Out {
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let perm = c.node.attr::<Vec<i64>>("perm")?.unwrap_or_else(|| (0..x.len() as i64).rev().collect());
    if perm.len() != x.len() {
        return Err(c.node.error(format!("perm {perm:?} does not match rank {}", x.len())));
    }
    let out = perm
        .iter()
        .map(|p| x.get(*p as usize).cloned().ok_or_else(|| c.node.error(format!("bad perm {perm:?}"))))
        .collect::<Result<_>>()?;
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn concat(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let axis = n.req_attr::<i64>("axis")?;
    let mut out: Option<Vec<Dim>> = None;
    let mut total = Some(0usize);
    for i in 0..n.inputs.len() {
        let Some(s) = c.shape(i) else {
            return Ok(vec![tensor(c.dtype(0), None)]);
        };
        if s.is_empty() {
            return Err(n.error("cannot concatenate scalars"));
        }
        let ax = norm_axis(n, axis, s.len())?;
        total = total.zip(s[ax].fixed()).and_then(|(a, b)| a.checked_add(b));
        if out.is_none() {
            out = Some(s.to_vec());
        }
    }
    let mut out = out.unwrap_or_default();
    if !out.is_empty() {
        let ax = norm_axis(n, axis, out.len())?;
        out[ax] = total.map(Dim::Fixed).unwrap_or(Dim::Unknown);
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn flatten(c: &InferCtx<'_>) -> Out {
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let axis = c.node.attr_or::<i64>("axis", 1)?;
    let r = x.len() as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a > r {
        return Err(c.node.error(format!("axis {axis} out of range for rank {r}")));
    }
    let prod = |d: &[Dim]| Dim::fixed_product(d).map_or(Dim::Unknown, Dim::Fixed);
    Ok(vec![tensor(c.dtype(0), Some(vec![prod(&x[..a as usize]), prod(&x[a as usize..])]))])
}

fn axes_of(c: &InferCtx<'_>) -> Result<Option<Vec<i64>>> {
    if c.node.opset >= 13 { Ok(if c.has(1) { c.const_ints(1) } else { None }) } else { c.node.attr::<Vec<i64>>("axes") }
}

pub(crate) fn squeeze(c: &InferCtx<'_>) -> Out {
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let axes = axes_of(c)?;
    if c.node.opset >= 13 && c.has(1) && axes.is_none() {
        // Run-time axes: the rank drops by their count (duplicates are invalid).
        let rank = c.len_1d(1).filter(|k| *k > 0).and_then(|k| x.len().checked_sub(k));
        return Ok(vec![tensor(c.dtype(0), rank.map(|r| vec![Dim::Unknown; r]))]);
    }
    let out = match axes {
        Some(a) => {
            let a: Vec<usize> = a.iter().map(|v| norm_axis(c.node, *v, x.len())).collect::<Result<_>>()?;
            x.iter().enumerate().filter(|(i, _)| !a.contains(i)).map(|(_, d)| d.clone()).collect()
        }
        None => {
            if x.iter().any(|d| d.fixed().is_none()) {
                return Ok(vec![tensor(c.dtype(0), None)]);
            }
            x.iter().filter(|d| **d != Dim::Fixed(1)).cloned().collect()
        }
    };
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn unsqueeze(c: &InferCtx<'_>) -> Out {
    let (Some(x), Some(axes)) = (c.shape(0), axes_of(c)?) else {
        // Run-time axes: the rank grows by their count.
        let rank = c.shape(0).zip(c.len_1d(1).filter(|_| c.node.opset >= 13)).map(|(x, k)| x.len() + k);
        return Ok(vec![tensor(c.dtype(0), rank.map(|r| vec![Dim::Unknown; r]))]);
    };
    let r = x.len() + axes.len();
    let mut a: Vec<usize> = axes.iter().map(|v| norm_axis(c.node, *v, r)).collect::<Result<_>>()?;
    a.sort_unstable();
    let mut it = x.iter();
    let out = (0..r)
        .map(|i| if a.contains(&i) { Some(Dim::Fixed(1)) } else { it.next().cloned() })
        .collect::<Option<Vec<_>>>();
    Ok(vec![tensor(c.dtype(0), out)])
}

/// Slice: a sliced axis of known extent takes the spec's length when starts, ends, axes and
/// steps are known before run time (attributes before opset 10, constant inputs after); other
/// axes keep their dims. `Shape -> Slice -> Concat -> Reshape` chains need this to keep the
/// Reshape's rank when the batch is dynamic.
pub(crate) fn slice(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let given = if n.opset >= 10 {
        // An omitted optional input is known (its default); a present one must be constant.
        let opt = |i: usize| if c.has(i) { c.const_ints(i).map(Some) } else { Some(None) };
        match (c.const_ints(1), c.const_ints(2), opt(3), opt(4)) {
            (Some(s), Some(e), Some(a), Some(st)) => Some((s, e, a, st)),
            _ => None,
        }
    } else {
        Some((n.req_attr::<Vec<i64>>("starts")?, n.req_attr::<Vec<i64>>("ends")?, n.attr::<Vec<i64>>("axes")?, None))
    };
    let Some((starts, ends, axes, steps)) = given else {
        return Ok(vec![tensor(c.dtype(0), Some(vec![Dim::Unknown; x.len()]))]);
    };
    let k = starts.len();
    let axes = axes.unwrap_or_else(|| (0..k as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; k]);
    if ends.len() != k || axes.len() != k || steps.len() != k {
        return Err(n.error(format!(
            "starts, ends, axes and steps differ in length ({k}, {}, {}, {})",
            ends.len(),
            axes.len(),
            steps.len()
        )));
    }
    let mut out = x.to_vec();
    for i in 0..k {
        let a = norm_axis(n, axes[i], x.len())?;
        out[a] = match x[a].fixed() {
            Some(d) => Dim::Fixed(
                crate::ops::slice_range(starts[i], ends[i], steps[i], d).map_err(|e| n.error(e.to_string()))?.1,
            ),
            None => Dim::Unknown,
        };
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn shape_range(n: &Node, rank: usize) -> Result<(usize, usize)> {
    let r = rank as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(n.attr_or::<i64>("start", 0)?);
    let end = clamp(n.attr_or::<i64>("end", r)?);
    Ok((start, end.max(start)))
}

pub(crate) fn shape(c: &InferCtx<'_>) -> Out {
    let len = match c.shape(0) {
        Some(s) => {
            let (a, b) = shape_range(c.node, s.len())?;
            Dim::Fixed(b - a)
        }
        None => Dim::Unknown,
    };
    Ok(vec![ValueType::Tensor(DType::I64, Some(vec![len]))])
}

pub(crate) fn gather(c: &InferCtx<'_>) -> Out {
    let (Some(x), Some(i)) = (c.shape(0), c.shape(1)) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let ax = norm_axis(c.node, c.node.attr_or::<i64>("axis", 0)?, x.len())?;
    let mut out = x[..ax].to_vec();
    out.extend(i.iter().cloned());
    out.extend(x[ax + 1..].iter().cloned());
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn constant_of_shape(c: &InferCtx<'_>) -> Out {
    let d = match c.node.attr::<Tensor>("value")? {
        Some(t) => t.dtype(),
        None => DType::F32,
    };
    let shape = match c.const_ints(0) {
        Some(s) => Some(s.iter().map(|v| Dim::Fixed((*v).max(0) as usize)).collect()),
        None => {
            let rank = c.shape(0).and_then(|s| s.first()).and_then(Dim::fixed).filter(|r| *r <= super::MAX_RANK);
            rank.map(|r| vec![Dim::Unknown; r])
        }
    };
    Ok(vec![ValueType::Tensor(d, shape)])
}

pub(crate) fn expand(c: &InferCtx<'_>) -> Out {
    let (Some(x), Some(s)) = (c.shape(0), c.const_ints(1)) else {
        // A run-time shape of known length: the output has the larger of the two ranks.
        let rank = c.shape(0).zip(c.len_1d(1)).map(|(x, k)| x.len().max(k));
        return Ok(vec![tensor(c.dtype(0), rank.map(|r| vec![Dim::Unknown; r]))]);
    };
    let target: Vec<Dim> = s.iter().map(|v| Dim::Fixed((*v).max(0) as usize)).collect();
    Ok(vec![tensor(c.dtype(0), Some(broadcast_dims(x, &target)?))])
}

#[cfg(test)]
mod tests {
    use super::super::rules::reduce;
    use super::*;
    use crate::attr::Attr;

    fn fixed(s: &[usize]) -> Vec<Dim> {
        s.iter().map(|d| Dim::Fixed(*d)).collect()
    }

    /// Runs `rule` for an `op` node whose inputs have these types and no constant values
    /// (run-time shapes and axes), with `attrs`.
    fn run_time(
        op: &str,
        opset: i64,
        rule: super::super::Rule,
        inputs: Vec<ValueType>,
        attrs: Vec<(String, Attr)>,
    ) -> ValueType {
        let node = Node {
            name: "n".into(),
            op_type: op.into(),
            domain: String::new(),
            opset,
            inputs: (0..inputs.len() as u32).map(|i| Some(crate::graph::ValueId(i))).collect(),
            outputs: vec![],
            implicit_inputs: vec![],
            attrs,
            proto: None,
        };
        let consts = vec![None; inputs.len()];
        let c = InferCtx { node: &node, inputs, consts };
        rule(&c).expect("rule").remove(0)
    }

    #[test]
    fn run_time_shapes_and_axes_of_known_length_keep_the_rank() {
        let f = |dims: &[Dim]| ValueType::Tensor(DType::F32, Some(dims.to_vec()));
        let ints = |k: usize| ValueType::Tensor(DType::I64, Some(vec![Dim::Fixed(k)]));
        let unknown = |r: usize| f(&vec![Dim::Unknown; r]);
        let x = f(&fixed(&[2, 3, 4]));
        let keepdims = |k: i64| vec![("keepdims".to_string(), Attr::Int(k))];
        assert_eq!(run_time("Reshape", 14, reshape, vec![x.clone(), ints(2)], vec![]), unknown(2));
        assert_eq!(run_time("Expand", 13, expand, vec![x.clone(), ints(4)], vec![]), unknown(4));
        assert_eq!(run_time("Expand", 13, expand, vec![x.clone(), ints(1)], vec![]), unknown(3));
        assert_eq!(run_time("Unsqueeze", 13, unsqueeze, vec![x.clone(), ints(2)], vec![]), unknown(5));
        assert_eq!(run_time("Squeeze", 13, squeeze, vec![x.clone(), ints(1)], vec![]), unknown(2));
        assert_eq!(run_time("ReduceSum", 13, reduce, vec![x.clone(), ints(2)], keepdims(1)), unknown(3));
        assert_eq!(run_time("ReduceSum", 13, reduce, vec![x.clone(), ints(2)], keepdims(0)), unknown(1));
        // What the length does not decide stays open: an axes list that may be empty (reduce
        // everything) and a shape input of unknown length.
        let open = ValueType::Tensor(DType::F32, None);
        assert_eq!(run_time("ReduceSum", 13, reduce, vec![x.clone(), ints(0)], keepdims(0)), open);
        let any_len = ValueType::Tensor(DType::I64, Some(vec![Dim::Unknown]));
        assert_eq!(run_time("Reshape", 14, reshape, vec![x.clone(), any_len.clone()], vec![]), open);
        assert_eq!(run_time("Expand", 13, expand, vec![x, any_len], vec![]), open);
    }

    #[test]
    fn slice_of_a_dynamic_shape_keeps_its_length() {
        let consts = |v: &[i64]| Some(Tensor::from_slice(&[v.len()], v).unwrap());
        let ints = |k: usize| ValueType::Tensor(DType::I64, Some(vec![Dim::Fixed(k)]));
        let node = |opset: i64| Node {
            name: "s".into(),
            op_type: "Slice".into(),
            domain: String::new(),
            opset,
            inputs: (0..5).map(|i| Some(crate::graph::ValueId(i))).collect(),
            outputs: vec![],
            implicit_inputs: vec![],
            attrs: vec![],
            proto: None,
        };
        let n = node(13);
        // Shape of a [?, 3, ?, ?] tensor, sliced [1:3] and [-1:] and backwards [3:0:-2].
        let run = |starts: &[i64], ends: &[i64], steps: &[i64]| {
            let inputs = vec![ints(4), ints(1), ints(1), ints(1), ints(1)];
            let c = InferCtx {
                node: &n,
                inputs,
                consts: vec![None, consts(starts), consts(ends), consts(&[0]), consts(steps)],
            };
            slice(&c).unwrap().remove(0)
        };
        assert_eq!(run(&[1], &[3], &[1]), ints(2));
        assert_eq!(run(&[-1], &[i64::MAX], &[1]), ints(1));
        assert_eq!(run(&[3], &[0], &[-2]), ints(2));
        assert_eq!(run(&[5], &[9], &[1]), ints(0));
        // Run-time starts: the axis is open, the rank stays.
        let c = InferCtx { node: &n, inputs: vec![ints(4), ints(1), ints(1)], consts: vec![None, None, consts(&[3])] };
        assert_eq!(slice(&c).unwrap().remove(0), ValueType::Tensor(DType::I64, Some(vec![Dim::Unknown])));
        // A dim of unknown extent stays unknown; the others keep theirs.
        let x = ValueType::Tensor(DType::F32, Some(vec![Dim::Unknown, Dim::Fixed(10)]));
        let c = InferCtx {
            node: &n,
            inputs: vec![x, ints(2), ints(2), ints(2), ints(2)],
            consts: vec![None, consts(&[0, 2]), consts(&[1, 7]), consts(&[0, 1]), consts(&[1, 1])],
        };
        assert_eq!(
            slice(&c).unwrap().remove(0),
            ValueType::Tensor(DType::F32, Some(vec![Dim::Unknown, Dim::Fixed(5)]))
        );
    }
}
