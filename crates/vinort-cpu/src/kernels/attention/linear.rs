//! [LinearAttention](https://onnx.ai/onnx/operators/onnx__LinearAttention.html) and
//! [CausalConvWithState](https://onnx.ai/onnx/operators/onnx__CausalConvWithState.html),
//! opset 27–latest.
//!
//! LinearAttention runs the recurrent form token by token over a per-KV-head state
//! `S [d_k, d_v]`: with `update_rule` `gated`/`gated_delta` the state first decays by
//! `exp(decay)` (per head or per key channel); with `delta`/`gated_delta` the value is replaced
//! by `beta · (v - Sᵀk)`; then `S += k vᵀ` and the output is `scale · qᵀS` (query heads
//! sharing KV heads in groups). Inputs are `[batch, seq, heads * dim]`.
//!
//! CausalConvWithState is a depthwise 1-D convolution over `[past_state, input]` (zeros when
//! there is no past), weight `[channels, 1, k]`, optional bias and SiLU; `present_state` is the
//! last `k - 1` steps of that concatenation.

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Value};

use super::{Rnd, store};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensors_in, tensors_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "LinearAttention", linear_factory);
    r.op("", "CausalConvWithState", conv_factory);
}

struct Linear {
    hq: usize,
    hkv: usize,
    scale: f32,
    gating: bool,
    delta: bool,
}

fn linear_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let hq = n.req_attr::<i64>("q_num_heads")?;
    let hkv = n.req_attr::<i64>("kv_num_heads")?;
    if hq <= 0 || hkv <= 0 || hq % hkv != 0 {
        return Err(Error::invalid(format!("q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")));
    }
    let rule = n.attr_or::<String>("update_rule", "gated_delta".into())?;
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => return Err(Error::invalid(format!("LinearAttention update_rule {other:?}"))),
    };
    Ok(Box::new(Linear { hq: hq as usize, hkv: hkv as usize, scale: n.attr_or::<f32>("scale", 0.0)?, gating, delta }))
}

impl Kernel for Linear {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [q, k, v] = tensors_in(inputs)?;
        let [past, decay, beta] = opt_tensors_in(inputs, 3)?;
        Rnd::of(q.dtype())?;
        let (hq, hkv) = (self.hq, self.hkv);
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        if qs.len() != 3 || ks.len() != 3 || vs.len() != 3 {
            return Err(Error::invalid("LinearAttention query, key and value must be 3-D"));
        }
        let (b, t) = (qs[0], qs[1]);
        if qs[2] % hq != 0 || vs[2] % hkv != 0 {
            return Err(Error::invalid("LinearAttention hidden sizes must divide by the head counts"));
        }
        let (dk, dv) = (qs[2] / hq, vs[2] / hkv);
        if ks != [b, t, hkv * dk] || vs[..2] != [b, t] {
            return Err(Error::invalid(format!("LinearAttention shapes {qs:?} {ks:?} {vs:?} disagree")));
        }
        if self.gating != decay.is_some() || self.delta != beta.is_some() {
            return Err(Error::invalid("LinearAttention decay/beta do not match update_rule"));
        }
        let dec = match decay {
            Some(d) => {
                let per = match d.shape() {
                    [db, dt, last] if *db == b && *dt == t && *last == hkv => 1,
                    [db, dt, last] if *db == b && *dt == t && *last == hkv * dk => dk,
                    s => return Err(Error::invalid(format!("LinearAttention decay shape {s:?}"))),
                };
                Some((d.to_f64_vec()?, per))
            }
            None => None,
        };
        let bet = match beta {
            Some(x) => match x.shape() {
                [bb, bt, last] if *bb == b && *bt == t && (*last == hkv || *last == 1) => {
                    Some((x.to_f64_vec()?, *last))
                }
                s => return Err(Error::invalid(format!("LinearAttention beta shape {s:?}"))),
            },
            None => None,
        };
        let mut state = match past {
            Some(p) => {
                if p.shape() != [b, hkv, dk, dv] {
                    return Err(Error::invalid(format!("LinearAttention past_state shape {:?}", p.shape())));
                }
                Rnd::F32.apply_all(p.to_f64_vec()?)
            }
            None => vec![0.0; b * hkv * dk * dv],
        };
        let state_dt = past.map_or(q.dtype(), |p| p.dtype());
        let (qv, kv, vv) = (q.to_f64_vec()?, k.to_f64_vec()?, v.to_f64_vec()?);
        let scale = if self.scale == 0.0 { 1.0 / (dk as f64).sqrt() } else { self.scale as f64 };
        let group = hq / hkv;
        let mut out = vec![0.0; b * t * hq * dv];
        let mut vt = vec![0.0; dv];
        for bi in 0..b {
            for ti in 0..t {
                for h in 0..hkv {
                    let s = &mut state[(bi * hkv + h) * dk * dv..(bi * hkv + h + 1) * dk * dv];
                    let row = bi * t + ti;
                    if let Some((d, per)) = &dec {
                        for c in 0..dk {
                            let g = d[(row * hkv + h) * per + if *per == 1 { 0 } else { c }].exp();
                            s[c * dv..(c + 1) * dv].iter_mut().for_each(|x| *x *= g);
                        }
                    }
                    let kt = &kv[(row * hkv + h) * dk..(row * hkv + h + 1) * dk];
                    vt.copy_from_slice(&vv[(row * hkv + h) * dv..(row * hkv + h + 1) * dv]);
                    if let Some((bv, last)) = &bet {
                        let be = bv[row * last + if *last == 1 { 0 } else { h }];
                        for (m, x) in vt.iter_mut().enumerate() {
                            let r: f64 = (0..dk).map(|c| s[c * dv + m] * kt[c]).sum();
                            *x = be * (*x - r);
                        }
                    }
                    for (c, kc) in kt.iter().enumerate() {
                        for (x, vm) in s[c * dv..(c + 1) * dv].iter_mut().zip(&vt) {
                            *x += kc * vm;
                        }
                    }
                    for g in 0..group {
                        let hh = h * group + g;
                        let qt = &qv[(row * hq + hh) * dk..(row * hq + hh + 1) * dk];
                        let o = &mut out[(row * hq + hh) * dv..(row * hq + hh + 1) * dv];
                        for (m, o) in o.iter_mut().enumerate() {
                            *o = scale * (0..dk).map(|c| qt[c] * s[c * dv + m]).sum::<f64>();
                        }
                    }
                }
            }
        }
        Ok(smallvec::smallvec![
            store(q.dtype(), &[b, t, hq * dv], &out)?.into(),
            store(state_dt, &[b, hkv, dk, dv], &state)?.into()
        ])
    }
}

struct CausalConv {
    silu: bool,
}

fn conv_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let act = info.node.attr_or::<String>("activation", "none".into())?;
    let silu = match act.as_str() {
        "none" => false,
        "silu" | "swish" => true,
        other => return Err(Error::invalid(format!("CausalConvWithState activation {other:?}"))),
    };
    Ok(Box::new(CausalConv { silu }))
}

impl Kernel for CausalConv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [x, w] = tensors_in(inputs)?;
        let [bias, past] = opt_tensors_in(inputs, 2)?;
        let rt = Rnd::of(x.dtype())?;
        let (&[b, c, l], &[wc, 1, k]) = (x.shape(), w.shape()) else {
            return Err(Error::invalid(format!(
                "CausalConvWithState needs input [b, c, l] and weight [c, 1, k], got {:?} and {:?}",
                x.shape(),
                w.shape()
            )));
        };
        if wc != c || k == 0 {
            return Err(Error::invalid("CausalConvWithState weight does not match the channels"));
        }
        let p = k - 1;
        let past_v = match past {
            Some(s) if s.shape() == [b, c, p] => s.to_f64_vec()?,
            Some(s) => return Err(Error::invalid(format!("CausalConvWithState past_state shape {:?}", s.shape()))),
            None => vec![0.0; b * c * p],
        };
        let bias_v = match bias {
            Some(t) if t.len() == c => t.to_f64_vec()?,
            Some(t) => return Err(Error::invalid(format!("CausalConvWithState bias shape {:?}", t.shape()))),
            None => vec![0.0; c],
        };
        let (xv, wv) = (x.to_f64_vec()?, w.to_f64_vec()?);
        let n = p + l;
        let mut out = vec![0.0; b * c * l];
        let mut present = vec![0.0; b * c * p];
        let mut padded = vec![0.0; n];
        for bc in 0..b * c {
            let ch = bc % c;
            padded[..p].copy_from_slice(&past_v[bc * p..(bc + 1) * p]);
            padded[p..].copy_from_slice(&xv[bc * l..(bc + 1) * l]);
            let wk = &wv[ch * k..(ch + 1) * k];
            for (t, o) in out[bc * l..(bc + 1) * l].iter_mut().enumerate() {
                let y = rt.r(bias_v[ch] + wk.iter().zip(&padded[t..t + k]).map(|(a, b)| a * b).sum::<f64>());
                *o = if self.silu {
                    let y32 = y as f32;
                    (y32 * (1.0 / (1.0 + (-y32).exp()))) as f64
                } else {
                    y
                };
            }
            present[bc * p..(bc + 1) * p].copy_from_slice(&padded[n - p..]);
        }
        Ok(smallvec::smallvec![
            store(x.dtype(), x.shape(), &out)?.into(),
            store(x.dtype(), &[b, c, p], &present)?.into()
        ])
    }
}
