//! [Unique](https://onnx.ai/onnx/operators/onnx__Unique.html), opset 11–latest, every
//! non-string element type: the distinct values or slices along an axis, their first indices,
//! inverse indices and counts.

use std::cmp::Ordering;
use vinort_ir::Values;

use vinort_ir::{DType, Elem, Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, norm_axis, tensor_in};
use crate::kernels::support::split;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Unique", unique_factory);
}

fn unique_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis = info.node.attr::<i64>("axis")?;
    let sorted = info.node.attr_or::<bool>("sorted", true)?;
    let n_out = info.node.outputs.len().clamp(1, 4);
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let mut out = match x.dtype() {
            DType::Bool => unique::<bool>(x, axis, sorted),
            dt => crate::kernel::with_numeric!(dt, |T| unique::<T>(x, axis, sorted), other => {
                Err(Error::unsupported(format!("element type {other}")))
            }),
        }?;
        out.truncate(n_out);
        Ok(out)
    })))
}

/// A total order on elements: NaNs equal each other and sort last.
fn cmp_elem<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    let nan = |v: &T| v != v;
    a.partial_cmp(b).unwrap_or_else(|| nan(a).cmp(&nan(b)))
}

/// The four outputs of Unique: values, first indices, inverse indices and counts.
pub fn unique<T: Elem + PartialOrd>(x: &Tensor, axis: Option<i64>, sorted: bool) -> Result<Values> {
    let src = x.as_slice::<T>()?;
    let (outer, n, inner, axis) = match axis {
        Some(a) => {
            let a = norm_axis(a, x.rank())?;
            let (o, n, i) = split(x.shape(), a);
            (o, n, i, Some(a))
        }
        None => (1, x.len(), 1, None),
    };
    let at = |k: usize, j: usize| src[((j / inner) * n + k) * inner + j % inner];
    let slice_cmp = |a: &usize, b: &usize| {
        (0..outer * inner).map(|j| cmp_elem(&at(*a, j), &at(*b, j))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(slice_cmp);
    // Groups of equal slices: (first index, count), in sorted order.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut group_of = vec![0usize; n];
    for (pos, &k) in order.iter().enumerate() {
        if pos == 0 || slice_cmp(&order[pos - 1], &k).is_ne() {
            groups.push((k, 0));
        }
        let g = groups.len() - 1;
        groups[g].1 += 1;
        group_of[k] = g;
    }
    if !sorted {
        let mut perm: Vec<usize> = (0..groups.len()).collect();
        perm.sort_by_key(|&g| groups[g].0);
        let mut rank = vec![0usize; groups.len()];
        for (r, &g) in perm.iter().enumerate() {
            rank[g] = r;
        }
        group_of.iter_mut().for_each(|g| *g = rank[*g]);
        groups = perm.iter().map(|&g| groups[g]).collect();
    }
    let ng = groups.len();
    let y_shape: Vec<usize> = match axis {
        Some(a) => x.shape().iter().enumerate().map(|(i, &d)| if i == a { ng } else { d }).collect(),
        None => vec![ng],
    };
    let y = Tensor::build::<T>(&y_shape, |o| {
        for (g, &(k, _)) in groups.iter().enumerate() {
            for j in 0..outer * inner {
                o[((j / inner) * ng + g) * inner + j % inner] = at(k, j);
            }
        }
    });
    let ints = |v: Vec<i64>| Tensor::from_vec(&[v.len()], v);
    Ok(smallvec::smallvec![
        Value::from(y),
        Value::from(ints(groups.iter().map(|g| g.0 as i64).collect())?),
        Value::from(ints(group_of.iter().map(|&g| g as i64).collect())?),
        Value::from(ints(groups.iter().map(|g| g.1 as i64).collect())?),
    ])
}
