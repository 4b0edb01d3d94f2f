//! [Attention](https://onnx.ai/onnx/operators/onnx__Attention.html), opsets 23–latest.
//!
//! `Y = softmax(softcap(Q·Kᵀ·scale) + bias)·V` per head, where `bias` combines the optional
//! `attn_mask` (boolean: false masks; float: added), the causal mask (`is_causal`, aligned to
//! the bottom right: query `i` sees key `j` iff `j <= i + offset`, the offset being the past
//! length or `nonpad_kv_seqlen[b] - q_len`), the sliding window of opset 25 and the key padding
//! of `nonpad_kv_seqlen` (opset 24). Query heads share KV heads in groups (`h / (Hq / Hkv)`).
//! A row whose bias is all `-inf` yields zero probabilities, hence a zero output row.
//!
//! 3-D inputs are `[batch, seq, heads * head_size]` (needing `q_num_heads` and
//! `kv_num_heads`); 4-D inputs are `[batch, heads, seq, head_size]`. `past_key`/`past_value`
//! are 4-D and are concatenated before the new keys/values into `present_key`/`present_value`.
//! The optional fourth output is selected by `qk_matmul_output_mode`: 0/1 the (softcapped)
//! scores, 2 the scores plus bias, 3 the probabilities.
//!
//! The scale is split as `sqrt(scale)` on both Q and K, and each intermediate is rounded to the
//! input type where the reference computes in it, so f16 and bf16 follow its rounding.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::heads::{Dims, Job, Mask, concat, head_major};
use super::{Rnd, store};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, opt_tensors_in, tensors_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Attention", factory);
}

struct Attention {
    scale: Option<f32>,
    is_causal: bool,
    q_heads: Option<usize>,
    kv_heads: Option<usize>,
    softmax_prec: Option<Rnd>,
    softcap: f32,
    mode: i64,
    left: i64,
    right: i64,
    /// Whether `nonpad_kv_seqlen` (input 6) exists in this opset.
    has_nonpad: bool,
    /// Which outputs the node asks for.
    want: [bool; 4],
    n_out: usize,
}

fn heads_attr(n: &vinort_ir::Node, name: &str) -> Result<Option<usize>> {
    match n.attr::<i64>(name)? {
        None => Ok(None),
        Some(v) if v > 0 => Ok(Some(v as usize)),
        Some(v) => Err(Error::invalid(format!("Attention {name} must be positive, got {v}"))),
    }
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    for i in [0, 1, 2] {
        if let Some(d) = info.input_dtype(i) {
            Rnd::of(d)?;
        }
    }
    let mode = n.attr_or::<i64>("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(Error::invalid(format!("Attention qk_matmul_output_mode {mode} is not 0..=3")));
    }
    let softmax_prec = n.attr::<i64>("softmax_precision")?.map(Rnd::of_code).transpose()?;
    let (left, right) = if n.opset >= 25 {
        (n.attr_or::<i64>("left_window_size", -1)?, n.attr_or::<i64>("right_window_size", -1)?)
    } else {
        (-1, -1)
    };
    if left < -1 || right < -1 {
        return Err(Error::invalid("Attention window sizes must be -1 or nonnegative"));
    }
    let mut want = [false; 4];
    for (w, o) in want.iter_mut().zip(&n.outputs) {
        *w = o.is_some();
    }
    Ok(Box::new(Attention {
        scale: n.attr::<f32>("scale")?,
        is_causal: n.attr_or::<i64>("is_causal", 0)? != 0,
        q_heads: heads_attr(n, "q_num_heads")?,
        kv_heads: heads_attr(n, "kv_num_heads")?,
        softmax_prec,
        softcap: n.attr_or::<f32>("softcap", 0.0)?,
        mode,
        left,
        right,
        has_nonpad: n.opset >= 24,
        want,
        n_out: n.outputs.len().min(4),
    }))
}

impl Kernel for Attention {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [q, k, v] = tensors_in(inputs)?;
        let [mask, pk, pv] = opt_tensors_in(inputs, 3)?;
        let nonpad = if self.has_nonpad { opt_tensor_in(inputs, 6)? } else { None };
        let rt = Rnd::of(q.dtype())?;
        let rk = Rnd::of(k.dtype())?;
        Rnd::of(v.dtype())?;
        let rank = q.rank();
        if k.rank() != rank || v.rank() != rank || !(rank == 3 || rank == 4) {
            return Err(Error::invalid(format!(
                "Attention needs Q, K, V all 3-D or all 4-D, got ranks {}, {}, {}",
                rank,
                k.rank(),
                v.rank()
            )));
        }
        let (qsh, ksh, vsh) = (q.shape(), k.shape(), v.shape());
        let three_d = rank == 3;
        let (hq, hkv, sq, skv, d, dk, dv);
        if three_d {
            hq = self.q_heads.ok_or_else(|| Error::invalid("3-D Attention needs q_num_heads"))?;
            hkv = self.kv_heads.ok_or_else(|| Error::invalid("3-D Attention needs kv_num_heads"))?;
            if qsh[2] % hq != 0 || ksh[2] % hkv != 0 || vsh[2] % hkv != 0 {
                return Err(Error::invalid("Attention hidden sizes must divide by the head counts"));
            }
            (sq, skv, d, dk, dv) = (qsh[1], ksh[1], qsh[2] / hq, ksh[2] / hkv, vsh[2] / hkv);
            if vsh[1] != skv {
                return Err(Error::invalid("Attention K and V sequence lengths differ"));
            }
        } else {
            (hq, sq, d) = (qsh[1], qsh[2], qsh[3]);
            (hkv, skv, dk) = (ksh[1], ksh[2], ksh[3]);
            dv = vsh[3];
            if vsh[1] != hkv || vsh[2] != skv {
                return Err(Error::invalid("Attention K and V shapes disagree"));
            }
        }
        let b = qsh[0];
        if ksh[0] != b || vsh[0] != b {
            return Err(Error::invalid("Attention Q, K, V batch sizes differ"));
        }
        if d != dk {
            return Err(Error::invalid(format!("Attention Q head size {d} differs from K head size {dk}")));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(Error::invalid(format!("Attention q heads {hq} must be a multiple of kv heads {hkv}")));
        }
        if pk.is_some() != pv.is_some() {
            return Err(Error::invalid("Attention past_key and past_value go together"));
        }
        let sp = match (pk, pv) {
            (Some(pk), Some(pv)) => {
                let (a, c) = (pk.shape(), pv.shape());
                if a.len() != 4 || c.len() != 4 || a[0] != b || a[1] != hkv || a[3] != dk {
                    return Err(Error::invalid(format!("Attention past_key shape {a:?} does not fit")));
                }
                if c[0] != b || c[1] != hkv || c[2] != a[2] || c[3] != dv {
                    return Err(Error::invalid(format!("Attention past_value shape {c:?} does not fit")));
                }
                a[2]
            }
            _ => 0,
        };
        let dims = Dims { b, hq, hkv, sq, skv, sp, d, dv };
        let tot = dims.tot();
        let nonpad = match nonpad {
            None => None,
            Some(t) => {
                let np = t.to_i64_vec()?;
                if np.len() != b {
                    return Err(Error::invalid(format!("nonpad_kv_seqlen has {} entries for batch {b}", np.len())));
                }
                Some(np)
            }
        };

        let qv = head_major(q.to_f64_vec()?, b, hq, sq, d, three_d);
        let kn = head_major(k.to_f64_vec()?, b, hkv, skv, d, three_d);
        let vn = head_major(v.to_f64_vec()?, b, hkv, skv, dv, three_d);
        let pkv = pk.map(|t| t.to_f64_vec()).transpose()?;
        let pvv = pv.map(|t| t.to_f64_vec()).transpose()?;
        let kall = concat(pkv.as_deref(), &kn, b, hkv, sp, skv, d);
        let vall = concat(pvv.as_deref(), &vn, b, hkv, sp, skv, dv);

        let scale = self.scale.map_or_else(|| 1.0 / (d as f64).sqrt(), |s| s as f64);
        let sc = rt.r(scale.sqrt());
        let qs: Vec<f64> = qv.iter().map(|x| rt.r(x * sc)).collect();
        let ks: Vec<f64> = kall.iter().map(|x| rk.r(x * sc)).collect();
        let mask = mask.map(|m| Mask::new(m, &dims)).transpose()?;
        let job = Job {
            dims,
            qs: &qs,
            ks: &ks,
            vs: &vall,
            mask: mask.as_ref(),
            nonpad: nonpad.as_deref(),
            rt,
            sr: self.softmax_prec.unwrap_or(rt),
            cap: (self.softcap > 0.0).then(|| rt.r(self.softcap as f64)),
            causal: self.is_causal,
            left: self.left,
            right: self.right,
            mode: self.mode,
            want_qk: self.want[3],
        };
        let work = b * hq * sq * tot * (d + dv);
        let heads: Vec<(Vec<f64>, Vec<f64>)> = if !crate::par::worth(work, 1 << 15) {
            (0..b * hq).map(|bh| job.head(bh)).collect()
        } else {
            (0..b * hq).into_par_iter().map(|bh| job.head(bh)).collect()
        };

        let mut y = vec![0.0; b * hq * sq * dv];
        for (bh, (yh, _)) in heads.iter().enumerate() {
            if three_d {
                let (bi, h) = (bh / hq, bh % hq);
                for i in 0..sq {
                    let dst = ((bi * sq + i) * hq + h) * dv;
                    y[dst..dst + dv].copy_from_slice(&yh[i * dv..(i + 1) * dv]);
                }
            } else {
                y[bh * sq * dv..(bh + 1) * sq * dv].copy_from_slice(yh);
            }
        }
        let yshape: Vec<usize> = if three_d { vec![b, sq, hq * dv] } else { vec![b, hq, sq, dv] };
        let mut outs: Values = smallvec::smallvec![store(q.dtype(), &yshape, &y)?.into()];
        if self.n_out > 1 {
            outs.push(store(k.dtype(), &[b, hkv, tot, d], &kall)?.into());
        }
        if self.n_out > 2 {
            outs.push(store(v.dtype(), &[b, hkv, tot, dv], &vall)?.into());
        }
        if self.n_out > 3 {
            let t = if self.want[3] {
                let qk: Vec<f64> = heads.into_iter().flat_map(|(_, qk)| qk).collect();
                store(q.dtype(), &[b, hq, sq, tot], &qk)?
            } else {
                Tensor::zeros(q.dtype(), &[0])
            };
            outs.push(t.into());
        }
        Ok(outs)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vinort_ir::{Attr, Node, ValueId, ValueType};

    use super::*;

    fn node(attrs: Vec<(&str, Attr)>, n_in: usize, n_out: usize) -> Node {
        Node {
            name: "attn".into(),
            op_type: "Attention".into(),
            domain: String::new(),
            opset: 24,
            inputs: (0..n_in).map(|i| Some(ValueId(i as u32))).collect(),
            outputs: (0..n_out).map(|i| Some(ValueId(100 + i as u32))).collect(),
            implicit_inputs: vec![],
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            proto: None,
        }
    }

    fn run(node: &Node, inputs: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
        let info = NodeInfo {
            node,
            inputs: inputs
                .iter()
                .map(|t| t.as_ref().map_or(ValueType::Unknown, |t| ValueType::tensor(t.dtype(), t.shape())))
                .collect(),
            consts: vec![None; inputs.len()],
            outputs: vec![ValueType::Unknown; node.outputs.len()],
            scope: Default::default(),
        };
        let k = factory(&info)?;
        let vals: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::from)).collect();
        let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
        k.run(&refs, &RunContext::default())?.into_iter().map(Value::into_tensor).collect()
    }

    /// Plain f64 attention over 4-D inputs: `mask[b][h][i][j]` true means attend.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        (b, hq, hkv, sq, skv, d): (usize, usize, usize, usize, usize, usize),
        causal: bool,
        allow: &dyn Fn(usize, usize, usize, usize) -> bool,
    ) -> Vec<f64> {
        let scale = 1.0 / (d as f64).sqrt();
        let mut y = vec![0.0; b * hq * sq * d];
        for bi in 0..b {
            for h in 0..hq {
                let kh = h / (hq / hkv);
                for i in 0..sq {
                    let mut s: Vec<f64> = (0..skv)
                        .map(|j| {
                            let ok = allow(bi, h, i, j) && (!causal || j <= i);
                            if !ok {
                                return f64::NEG_INFINITY;
                            }
                            (0..d)
                                .map(|c| q[((bi * hq + h) * sq + i) * d + c] * k[((bi * hkv + kh) * skv + j) * d + c])
                                .sum::<f64>()
                                * scale
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    if m == f64::NEG_INFINITY {
                        continue;
                    }
                    let z: f64 = s
                        .iter_mut()
                        .map(|x| {
                            *x = (*x - m).exp();
                            *x
                        })
                        .sum();
                    for c in 0..d {
                        y[((bi * hq + h) * sq + i) * d + c] =
                            (0..skv).map(|j| s[j] / z * v[((bi * hkv + kh) * skv + j) * d + c]).sum::<f64>();
                    }
                }
            }
        }
        y
    }

    fn tensor(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::build::<f32>(shape, |o| o.iter_mut().zip(v).for_each(|(o, v)| *o = *v as f32))
    }

    proptest! {
        #![proptest_config(crate::test_support::config(48))]
        #[test]
        fn matches_naive(
            b in 1usize..3, hkv in 1usize..3, rep in 1usize..4, sq in 1usize..5, skv in 1usize..6,
            d in 1usize..6, causal in any::<bool>(), mask_kind in 0u8..3, seed in any::<u64>(),
        ) {
            let hq = hkv * rep;
            let rnd = |n: usize, s: u64| -> Vec<f64> {
                let mut x = s ^ 0x9e37_79b9_7f4a_7c15;
                (0..n).map(|_| {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
                }).collect()
            };
            let q = rnd(b * hq * sq * d, seed);
            let k = rnd(b * hkv * skv * d, seed.wrapping_add(1));
            let v = rnd(b * hkv * skv * d, seed.wrapping_add(2));
            let bits = rnd(b * sq * skv, seed.wrapping_add(3));
            let allow = |bi: usize, _h: usize, i: usize, j: usize| mask_kind == 0 || bits[(bi * sq + i) * skv + j] > -0.5;
            let want = naive(&q, &k, &v, (b, hq, hkv, sq, skv, d), causal, &allow);
            let mut attrs = vec![];
            if causal { attrs.push(("is_causal", Attr::Int(1))); }
            let mut inputs = vec![
                Some(tensor(&[b, hq, sq, d], &q)),
                Some(tensor(&[b, hkv, skv, d], &k)),
                Some(tensor(&[b, hkv, skv, d], &v)),
            ];
            let mshape = [b, 1, sq, skv];
            match mask_kind {
                1 => inputs.push(Some(Tensor::build::<bool>(&mshape, |o| {
                    for (x, t) in o.iter_mut().zip(&bits) { *x = *t > -0.5; }
                }))),
                2 => inputs.push(Some(tensor(&mshape, &bits.iter().map(|t| if *t > -0.5 { 0.0 } else { f64::NEG_INFINITY }).collect::<Vec<_>>()))),
                _ => {}
            }
            let n = node(attrs, inputs.len(), 1);
            let got = run(&n, &inputs).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got = got[0].to_f64_vec().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert!((g - w).abs() <= 1e-5 + 1e-4 * w.abs(), "got {} want {}", g, w);
            }
        }
    }

    #[test]
    fn three_d_matches_four_d_with_present() {
        let (b, h, s, d) = (1, 2, 3, 2);
        let vals: Vec<f64> = (0..b * h * s * d).map(|i| (i as f64 * 0.37).sin()).collect();
        let t4 = tensor(&[b, h, s, d], &vals);
        let four = run(&node(vec![], 3, 3), &[Some(t4.clone()), Some(t4.clone()), Some(t4)]).unwrap_or_default();
        // [b, h, s, d] -> [b, s, h*d]
        let mut v3 = vec![0.0; vals.len()];
        for hi in 0..h {
            for si in 0..s {
                for c in 0..d {
                    v3[(si * h + hi) * d + c] = vals[(hi * s + si) * d + c];
                }
            }
        }
        let t3 = tensor(&[b, s, h * d], &v3);
        let attrs = vec![("q_num_heads", Attr::Int(2)), ("kv_num_heads", Attr::Int(2))];
        let three = run(&node(attrs, 3, 3), &[Some(t3.clone()), Some(t3.clone()), Some(t3)]).unwrap_or_default();
        assert_eq!(four.len(), 3);
        assert_eq!(three.len(), 3);
        assert_eq!(three[1].shape(), &[1, 2, 3, 2]);
        assert_eq!(three[1].to_f64_vec().ok(), four[1].to_f64_vec().ok());
        let (y4, y3) = (four[0].to_f64_vec().unwrap_or_default(), three[0].to_f64_vec().unwrap_or_default());
        for hi in 0..h {
            for si in 0..s {
                for c in 0..d {
                    assert_eq!(y3[(si * h + hi) * d + c], y4[(hi * s + si) * d + c]);
                }
            }
        }
    }
}
