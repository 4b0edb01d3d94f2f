//! [Einsum](https://onnx.ai/onnx/operators/onnx__Einsum.html): equation parsing (ellipsis,
//! implicit output, repeated labels) and a strided sum-of-products evaluator.

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry};
use crate::kernels::reduce::elem::{Acc, RElem};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Einsum", factory);
}

/// Label ids: letters take 0..52, the ellipsis dimensions take 52 onwards.
const ELL0: usize = 52;

/// One term of an equation: letter ids, with the position of the ellipsis if present.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    labels: Vec<usize>,
    ellipsis: Option<usize>,
}

fn letter_id(c: char) -> Result<usize> {
    match c {
        'A'..='Z' => Ok(c as usize - 'A' as usize),
        'a'..='z' => Ok(26 + c as usize - 'a' as usize),
        _ => Err(Error::invalid(format!("Einsum label {c:?} is not a letter"))),
    }
}

fn parse_term(s: &str) -> Result<Term> {
    let mut labels = Vec::new();
    let mut ellipsis = None;
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("...") {
            if ellipsis.is_some() {
                return Err(Error::invalid(format!("Einsum term {s:?} has two ellipses")));
            }
            ellipsis = Some(labels.len());
            rest = r;
        } else {
            let mut it = rest.chars();
            let c = it.next().unwrap_or(' ');
            labels.push(letter_id(c)?);
            rest = it.as_str();
        }
    }
    Ok(Term { labels, ellipsis })
}

/// A parsed equation.
#[derive(Clone, Debug)]
struct Equation {
    inputs: Vec<Term>,
    output: Option<Term>,
}

fn parse(eq: &str) -> Result<Equation> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let inputs = lhs.split(',').map(parse_term).collect::<Result<Vec<_>>>()?;
    let output = rhs.map(parse_term).transpose()?;
    Ok(Equation { inputs, output })
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let eq = parse(&info.node.req_attr::<String>("equation")?)?;
    if eq.inputs.len() != info.node.inputs.len() {
        return Err(info.node.error(format!(
            "equation has {} operands but the node has {} inputs",
            eq.inputs.len(),
            info.node.inputs.len()
        )));
    }
    Ok(Box::new(EinsumKernel { eq }))
}

struct EinsumKernel {
    eq: Equation,
}

impl Kernel for EinsumKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let ts = (0..self.eq.inputs.len()).map(|i| crate::kernel::tensor_in(inputs, i)).collect::<Result<Vec<_>>>()?;
        Ok(smallvec::smallvec![Value::from(einsum(&self.eq, &ts)?)])
    }
}

/// Evaluates a parsed equation on tensors of one element type.
fn einsum(eq: &Equation, ts: &[&Tensor]) -> Result<Tensor> {
    let dtype = ts.first().map(|t| t.dtype()).ok_or_else(|| Error::invalid("Einsum needs an input"))?;
    if let Some(t) = ts.iter().find(|t| t.dtype() != dtype) {
        return Err(Error::invalid(format!("Einsum inputs mix {dtype} and {}", t.dtype())));
    }
    crate::kernel::with_numeric!(dtype, |T| einsum_typed::<T>(eq, ts), other => {
        Err(Error::unsupported(format!("element type {other}")))
    })
}

/// Each operand's label id per axis.
fn axis_ids(eq: &Equation, ranks: &[usize]) -> Result<(Vec<Vec<usize>>, usize)> {
    let mut ell_ranks = Vec::new();
    for (t, &r) in eq.inputs.iter().zip(ranks) {
        let e = r
            .checked_sub(t.labels.len())
            .ok_or_else(|| Error::invalid(format!("Einsum term has {} labels for a rank-{r} input", t.labels.len())))?;
        if e > 0 && t.ellipsis.is_none() {
            return Err(Error::invalid(format!("Einsum term has {} labels for a rank-{r} input", t.labels.len())));
        }
        ell_ranks.push(e);
    }
    let max_ell = ell_ranks.iter().copied().max().unwrap_or(0);
    let ids = eq.inputs.iter().zip(&ell_ranks).map(|(t, &e)| expand(t, e, max_ell)).collect();
    Ok((ids, max_ell))
}

/// Label ids of a term's axes, the ellipsis standing for its last `e` of `max_ell` dimensions.
fn expand(t: &Term, e: usize, max_ell: usize) -> Vec<usize> {
    let mut v = Vec::with_capacity(t.labels.len() + e);
    for (i, &l) in t.labels.iter().enumerate() {
        if t.ellipsis == Some(i) {
            v.extend((max_ell - e..max_ell).map(|k| ELL0 + k));
        }
        v.push(l);
    }
    if t.ellipsis == Some(t.labels.len()) {
        v.extend((max_ell - e..max_ell).map(|k| ELL0 + k));
    }
    v
}

fn einsum_typed<T: RElem>(eq: &Equation, ts: &[&Tensor]) -> Result<Tensor> {
    let ranks: Vec<usize> = ts.iter().map(|t| t.rank()).collect();
    let (ids, max_ell) = axis_ids(eq, &ranks)?;
    let nid = ELL0 + max_ell;
    // Extent of each label, broadcasting extents of 1.
    let mut size: Vec<Option<usize>> = vec![None; nid];
    let mut count = vec![0usize; nid];
    for (t, ax) in ts.iter().zip(&ids) {
        for (&d, &id) in t.shape().iter().zip(ax) {
            count[id] += 1;
            size[id] = match size[id] {
                None => Some(d),
                Some(s) if s == d || d == 1 => Some(s),
                Some(1) => Some(d),
                Some(s) => {
                    return Err(Error::invalid(format!("Einsum label extents {s} and {d} do not match")));
                }
            };
        }
    }
    let out_ids: Vec<usize> = match &eq.output {
        Some(o) => {
            let v = expand(o, max_ell, max_ell);
            for &id in &v {
                if id < ELL0 && size[id].is_none() {
                    return Err(Error::invalid("Einsum output label does not appear in any input"));
                }
            }
            v
        }
        None => {
            let mut v: Vec<usize> = (ELL0..nid).collect();
            v.extend((0..ELL0).filter(|&id| count[id] == 1));
            v
        }
    };
    let sum_ids: Vec<usize> = (0..nid).filter(|id| size[*id].is_some() && !out_ids.contains(id)).collect();
    let ext = |id: usize| size[id].unwrap_or(1);
    let out_shape: Vec<usize> = out_ids.iter().map(|&id| ext(id)).collect();
    // Per operand, the stride of each label (repeated labels add up: a diagonal).
    let strides: Vec<Vec<usize>> = ts
        .iter()
        .zip(&ids)
        .map(|(t, ax)| {
            let mut s = vec![0usize; nid];
            let st = vinort_ir::tensor::strides_of(t.shape());
            for ((&d, &id), &k) in t.shape().iter().zip(ax).zip(st.iter()) {
                if d != 1 {
                    s[id] += k;
                }
            }
            s
        })
        .collect();
    let data: Vec<&[T]> = ts.iter().map(|t| t.as_slice::<T>()).collect::<Result<_>>()?;
    let sum_ext: Vec<usize> = sum_ids.iter().map(|&id| ext(id)).collect();
    let sum_st: Vec<Vec<usize>> = strides.iter().map(|s| sum_ids.iter().map(|&id| s[id]).collect()).collect();
    let out_st: Vec<Vec<usize>> = strides.iter().map(|s| out_ids.iter().map(|&id| s[id]).collect()).collect();
    let n_sum: usize = sum_ext.iter().product();
    let nops = ts.len();
    Ok(Tensor::build::<T>(&out_shape, |out| {
        let mut oidx = vec![0usize; out_shape.len()];
        let mut base = vec![0usize; nops];
        let mut sidx = vec![0usize; sum_ext.len()];
        let mut off = vec![0usize; nops];
        for o in out.iter_mut() {
            let mut acc = <T::A as Acc>::ZERO;
            if n_sum > 0 {
                sidx.iter_mut().for_each(|v| *v = 0);
                off.copy_from_slice(&base);
                for _ in 0..n_sum {
                    let mut p = <T::A as Acc>::ONE;
                    for (d, &k) in data.iter().zip(&off) {
                        p = p.mul(d[k].load());
                    }
                    acc = acc.add(p);
                    step(&mut sidx, &sum_ext, &sum_st, &mut off);
                }
            }
            *o = T::store(acc);
            step(&mut oidx, &out_shape, &out_st, &mut base);
        }
    }))
}

/// Advances an odometer `idx` over `ext`, keeping each operand's offset in `off` in step.
#[inline]
fn step(idx: &mut [usize], ext: &[usize], st: &[Vec<usize>], off: &mut [usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        for (o, s) in off.iter_mut().zip(st) {
            *o += s[d];
        }
        if idx[d] < ext[d] {
            return;
        }
        for (o, s) in off.iter_mut().zip(st) {
            *o -= s[d] * idx[d];
        }
        idx[d] = 0;
    }
}

#[cfg(test)]
pub(crate) fn einsum_for_test(equation: &str, ts: &[&Tensor]) -> Result<Tensor> {
    einsum(&parse(equation)?, ts)
}
