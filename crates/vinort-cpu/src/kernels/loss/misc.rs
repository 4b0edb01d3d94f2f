//! [CumProd](https://onnx.ai/onnx/operators/onnx__CumProd.html),
//! [Det](https://onnx.ai/onnx/operators/onnx__Det.html),
//! [Unique](https://onnx.ai/onnx/operators/onnx__Unique.html),
//! [BitCast](https://onnx.ai/onnx/operators/onnx__BitCast.html),
//! [MaxUnpool](https://onnx.ai/onnx/operators/onnx__MaxUnpool.html) and
//! [TensorScatter](https://onnx.ai/onnx/operators/onnx__TensorScatter.html).

use std::cmp::Ordering;

use vinort_ir::{DType, Elem, Error, Result, Tensor, Value};

use super::{Ring, dispatch_ring, load_f64, narrow_half, store_f64, widen_half};
use crate::kernel::{FnKernel, Kernel, MAX_OPSET, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.add("", "CumProd", 26..=MAX_OPSET, cumprod_factory);
    r.add("", "Det", 11..=MAX_OPSET, |_| Ok(Box::new(FnKernel(det_kernel))));
    r.add("", "Unique", 11..=MAX_OPSET, unique_factory);
    r.add("", "BitCast", 26..=MAX_OPSET, bitcast_factory);
    r.add("", "MaxUnpool", 9..=MAX_OPSET, maxunpool_factory);
    r.add("", "TensorScatter", 24..=MAX_OPSET, tensorscatter_factory);
}

/// `(outer, extent, inner)` of a shape around `axis`.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

// ---------------------------------------------------------------- CumProd

fn cumprod_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let exclusive = info.node.attr_or::<bool>("exclusive", false)?;
    let reverse = info.node.attr_or::<bool>("reverse", false)?;
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let axis = match tensor_in(inputs, 1)?.to_i64_vec()?.as_slice() {
            [a] => norm_axis(*a, x.rank())?,
            _ => return Err(Error::invalid("CumProd axis must be a scalar")),
        };
        let w = widen_half(x)?;
        let y = dispatch_ring!(x.dtype(), T => cumprod::<T>(&w, axis, exclusive, reverse))?;
        Ok(vec![Value::from(narrow_half(y, x.dtype())?)])
    })))
}

fn cumprod<T: Ring>(x: &Tensor, axis: usize, exclusive: bool, reverse: bool) -> Result<Tensor> {
    let src = x.as_slice::<T>()?;
    let (outer, n, inner) = split(x.shape(), axis);
    Ok(Tensor::build::<T>(x.shape(), |out| {
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = T::ONE;
                for s in 0..n {
                    let k = if reverse { n - 1 - s } else { s };
                    let at = (o * n + k) * inner + i;
                    if exclusive {
                        out[at] = acc;
                        acc = acc.mul(src[at]);
                    } else {
                        acc = acc.mul(src[at]);
                        out[at] = acc;
                    }
                }
            }
        }
    }))
}

// ---------------------------------------------------------------- Det

fn det_kernel(inputs: &[Option<&Value>]) -> Result<Vec<Value>> {
    let x = tensor_in(inputs, 0)?;
    let s = x.shape();
    let r = s.len();
    if r < 2 || s[r - 1] != s[r - 2] {
        return Err(Error::invalid(format!("Det needs square matrices, got shape {s:?}")));
    }
    let m = s[r - 1];
    let v = load_f64(x)?;
    let dets: Vec<f64> = if m == 0 {
        vec![1.0; s[..r - 2].iter().product()]
    } else {
        v.chunks_exact(m * m).map(|a| det(a.to_vec(), m)).collect()
    };
    Ok(vec![Value::from(store_f64(x.dtype(), &s[..r - 2], &dets)?)])
}

/// Determinant of an `m`×`m` row-major matrix by LU decomposition with partial pivoting.
pub fn det(mut a: Vec<f64>, m: usize) -> f64 {
    let mut d = 1.0;
    for c in 0..m {
        let p = (c..m).max_by(|&i, &j| a[i * m + c].abs().total_cmp(&a[j * m + c].abs())).unwrap_or(c);
        if a[p * m + c] == 0.0 {
            return 0.0;
        }
        if p != c {
            for k in 0..m {
                a.swap(p * m + k, c * m + k);
            }
            d = -d;
        }
        let piv = a[c * m + c];
        d *= piv;
        for i in c + 1..m {
            let f = a[i * m + c] / piv;
            if f != 0.0 {
                for k in c..m {
                    a[i * m + k] -= f * a[c * m + k];
                }
            }
        }
    }
    d
}

// ---------------------------------------------------------------- Unique

/// Runs `$body` with `$T` bound to the Rust type of any non-string, byte-sized-or-larger
/// element type.
macro_rules! dispatch_elem {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::Bool => {
                type $T = bool;
                $body
            }
            other => $crate::kernel::with_numeric!(other, |$T| $body, other => {
                Err(Error::unsupported(format!("element type {other}")))
            }),
        }
    };
}

fn unique_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis = info.node.attr::<i64>("axis")?;
    let sorted = info.node.attr_or::<bool>("sorted", true)?;
    let n_out = info.node.outputs.len().clamp(1, 4);
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let mut out = dispatch_elem!(x.dtype(), T => unique::<T>(x, axis, sorted))?;
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
pub fn unique<T: Elem + PartialOrd>(x: &Tensor, axis: Option<i64>, sorted: bool) -> Result<Vec<Value>> {
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
    Ok(vec![
        Value::from(y),
        Value::from(ints(groups.iter().map(|g| g.0 as i64).collect())?),
        Value::from(ints(group_of.iter().map(|&g| g as i64).collect())?),
        Value::from(ints(groups.iter().map(|g| g.1 as i64).collect())?),
    ])
}

// ---------------------------------------------------------------- BitCast

/// True when a type is stored one element per `size()` bytes with no unused bits.
fn whole_bytes(d: DType) -> bool {
    d != DType::String && d.packed_bits() == 8 * d.size()
}

fn bitcast_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let code = info.node.req_attr::<i64>("to")?;
    let to = i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx)
        .ok_or_else(|| info.node.error(format!("unknown element type {code}")))?;
    if !whole_bytes(to) {
        return Err(Error::unsupported(format!("BitCast to {to}")));
    }
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        if !whole_bytes(x.dtype()) || x.dtype().size() != to.size() {
            return Err(Error::invalid(format!("BitCast from {} to {to}: bit widths differ", x.dtype())));
        }
        let y = Tensor::build_raw(to, x.shape(), |b| b.copy_from_slice(x.as_bytes()))?;
        Ok(vec![Value::from(y)])
    })))
}

// ---------------------------------------------------------------- MaxUnpool

fn maxunpool_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let kernel: Vec<i64> = n.req_attr("kernel_shape")?;
    let k = kernel.len();
    let strides: Vec<i64> = n.attr_or("strides", vec![1; k])?;
    let pads: Vec<i64> = n.attr_or("pads", vec![0; 2 * k])?;
    if strides.len() != k || pads.len() != 2 * k || kernel.iter().chain(&strides).chain(&pads).any(|v| *v < 0) {
        return Err(n.error("kernel_shape, strides and pads do not agree"));
    }
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let idx = tensor_in(inputs, 1)?.to_i64_vec()?;
        let s = x.shape();
        if s.len() != k + 2 || idx.len() != x.len() {
            return Err(Error::invalid(format!("MaxUnpool input shape {s:?} does not fit the kernel and indices")));
        }
        let mut inferred = vec![s[0], s[1]];
        for d in 0..k {
            let v = (s[d + 2] as i64 - 1) * strides[d] - pads[d] - pads[k + d] + kernel[d];
            inferred.push(usize::try_from(v).map_err(|_| Error::invalid("MaxUnpool output extent is negative"))?);
        }
        let shape = match opt_tensor_in(inputs, 2)? {
            Some(t) => t
                .to_i64_vec()?
                .into_iter()
                .map(|v| usize::try_from(v).map_err(|_| Error::invalid("negative output_shape")))
                .collect::<Result<Vec<_>>>()?,
            None => inferred.clone(),
        };
        if shape.len() != inferred.len() || shape.iter().zip(&inferred).any(|(a, b)| a < b) {
            return Err(Error::invalid(format!("output_shape {shape:?} is smaller than {inferred:?}")));
        }
        let total: usize = inferred.iter().product();
        let es = x.dtype().size();
        let xb = x.as_bytes();
        // Indices address the inferred shape, which sits at the origin of the output.
        let ost = vinort_ir::tensor::strides_of(&shape);
        let ist = vinort_ir::tensor::strides_of(&inferred);
        let mut err = None;
        let y = Tensor::build_raw(x.dtype(), &shape, |out| {
            for (e, &i) in idx.iter().enumerate() {
                let Some(i) = usize::try_from(i).ok().filter(|i| *i < total) else {
                    err = Some(Error::invalid(format!("MaxUnpool index {i} is out of range")));
                    return;
                };
                let mut rem = i;
                let mut off = 0;
                for (a, b) in ist.iter().zip(ost.iter()) {
                    off += (rem / a) * b;
                    rem %= a;
                }
                out[off * es..(off + 1) * es].copy_from_slice(&xb[e * es..(e + 1) * es]);
            }
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        Ok(vec![Value::from(y)])
    })))
}

// ---------------------------------------------------------------- TensorScatter

fn tensorscatter_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let axis = n.attr_or::<i64>("axis", -2)?;
    let circular = match n.attr_or::<String>("mode", "linear".into())?.as_str() {
        "linear" => false,
        "circular" => true,
        other => return Err(n.error(format!("unknown mode {other:?}"))),
    };
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let past = tensor_in(inputs, 0)?;
        let upd = tensor_in(inputs, 1)?;
        let ps = past.shape();
        let us = upd.shape();
        let a = norm_axis(axis, ps.len())?;
        if a == 0
            || upd.dtype() != past.dtype()
            || us.len() != ps.len()
            || us.iter().zip(ps).enumerate().any(|(i, (u, p))| i != a && u != p)
            || us[a] > ps[a]
        {
            return Err(Error::invalid(format!("update {us:?} does not fit cache {ps:?} on axis {a}")));
        }
        let batch = ps[0];
        let wi = match opt_tensor_in(inputs, 2)? {
            Some(t) => t.to_i64_vec()?,
            None => vec![0; batch],
        };
        if wi.len() != batch {
            return Err(Error::invalid(format!("{} write indices for batch {batch}", wi.len())));
        }
        let (outer, max_seq, inner) = split(ps, a);
        let seq = us[a];
        let per_batch = outer / batch.max(1);
        let es = past.dtype().size();
        let (pb, ub) = (past.as_bytes(), upd.as_bytes());
        let row = inner * es;
        let mut err = None;
        let y = Tensor::build_raw(past.dtype(), ps, |out| {
            out.copy_from_slice(pb);
            for p in 0..outer {
                let w = wi[p / per_batch.max(1)];
                for s in 0..seq {
                    let mut c = w + s as i64;
                    if circular {
                        c = c.rem_euclid(max_seq as i64);
                    }
                    if c < 0 || c as usize >= max_seq {
                        err = Some(Error::invalid(format!("write index {c} is outside the cache")));
                        return;
                    }
                    let dst = (p * max_seq + c as usize) * row;
                    let src = (p * seq + s) * row;
                    out[dst..dst + row].copy_from_slice(&ub[src..src + row]);
                }
            }
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        Ok(vec![Value::from(y)])
    })))
}
