//! [FlexAttention](https://onnx.ai/onnx/operators/onnx_aionnxpreview_FlexAttention.html),
//! domain `ai.onnx.preview`, version 1; f32, f64, f16 and bf16.
//!
//! Rank-4 attention, `Q (B, Hq, L, E)`, `K (B, Hkv, S, E)`, `V (B, Hkv, S, Ev)` →
//! `Y (B, Hq, L, Ev)`:
//!
//! ```text
//! scores = (Q·√scale)(K·√scale)ᵀ            in the input type T
//! scores = score_mod(scores)                in the softmax type C   (optional subgraph)
//! probs  = softmax(scores, axis = -1)       in C
//! probs  = prob_mod(probs)                  in C                    (optional subgraph)
//! Y      = probs · V                        in C, then cast to T
//! ```
//!
//! Query head `h` reads KV head `h / (Hq / Hkv)` (grouped-query attention). `scale` defaults to
//! `1/√E`; C is `softmax_precision` when given, else f64 for f64 inputs and f32 otherwise.
//! Masking is the modifiers' business: they write `-inf` where a score must not count.
//!
//! Roundings follow the ONNX reference implementation, like [`super::sdpa`]: `√scale` is taken
//! in f32 and rounded to T, the scaled Q and K and the scores are rounded to T, the scores are
//! then cast to C, the softmax and the product with V are rounded in C, and Y is rounded to T.
//! Where PyTorch returns zeros for a query whose scores are all `-inf`, the reference's
//! softmax yields NaN (`-inf - -inf`), and so does this kernel.
//!
//! The modifiers are compiled graph attributes ([`Body`]) run once per call on the whole
//! `(B, Hq, L, S)` tensor of type C; their output is cast back to C, as the reference does.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Value};

use super::heads::softmax;
use super::{Rnd, store};
use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};
use crate::kernels::control::Body;

pub(crate) fn register(r: &mut Registry) {
    r.op("ai.onnx.preview", "FlexAttention", factory);
}

struct FlexAttention {
    scale: Option<f32>,
    softmax_prec: Option<Rnd>,
    score_mod: Option<Body>,
    prob_mod: Option<Body>,
    /// Number of explicit inputs; the node's implicit (outer-scope) inputs follow them.
    explicit: usize,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    for i in 0..3 {
        if let Some(d) = info.input_dtype(i) {
            Rnd::of(d).map_err(|e| n.error(format!("input {i}: {e}")))?;
        }
    }
    let softmax_prec = n
        .attr::<i64>("softmax_precision")?
        .map(Rnd::of_code)
        .transpose()
        .map_err(|e| n.error(format!("softmax_precision: {e}")))?;
    let score_mod = Body::compile_opt(info, "score_mod")?;
    let prob_mod = Body::compile_opt(info, "prob_mod")?;
    for (name, body) in [("score_mod", &score_mod), ("prob_mod", &prob_mod)] {
        if let Some(b) = body
            && (b.plan.num_inputs != 1 || b.plan.num_outputs != 1)
        {
            return Err(n.error(format!(
                "{name} must take one input and give one output; it takes {} and gives {}",
                b.plan.num_inputs, b.plan.num_outputs
            )));
        }
    }
    Ok(Box::new(FlexAttention {
        scale: n.attr::<f32>("scale")?,
        softmax_prec,
        score_mod,
        prob_mod,
        explicit: n.inputs.len(),
    }))
}

/// Shapes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    hq: usize,
    hkv: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

impl Dims {
    fn of(q: &[usize], k: &[usize], v: &[usize]) -> Result<Dims> {
        let [b, hq, l, e] = *q else { return Err(rank_error(q, k, v)) };
        let [bk, hkv, s, ek] = *k else { return Err(rank_error(q, k, v)) };
        let [bv, hv, sv, ev] = *v else { return Err(rank_error(q, k, v)) };
        if bk != b || bv != b {
            return Err(Error::invalid(format!("Q, K, V batch sizes differ: {b}, {bk}, {bv}")));
        }
        if hv != hkv || sv != s {
            return Err(Error::invalid(format!("K {k:?} and V {v:?} differ in heads or sequence length")));
        }
        if ek != e {
            return Err(Error::invalid(format!("Q head size {e} differs from K head size {ek}")));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(Error::invalid(format!("Q heads {hq} must be a multiple of K/V heads {hkv}")));
        }
        Ok(Dims { b, hq, hkv, l, s, e, ev })
    }

    /// The KV head `(b, kv head)` index of query head `bh = b * hq + h`.
    fn kv(&self, bh: usize) -> usize {
        let (b, h) = (bh / self.hq, bh % self.hq);
        b * self.hkv + h / (self.hq / self.hkv)
    }
}

fn rank_error(q: &[usize], k: &[usize], v: &[usize]) -> Error {
    Error::invalid(format!("FlexAttention needs rank-4 Q, K, V; got shapes {q:?}, {k:?}, {v:?}"))
}

/// Runs `f(bh, chunk)` over consecutive `chunk`-sized pieces of `out`, one per (batch, query
/// head), on rayon when `work` multiply-adds pay for it.
fn per_head(out: &mut [f64], chunk: usize, work: usize, f: impl Fn(usize, &mut [f64]) + Sync) {
    if chunk == 0 {
        return;
    }
    if !crate::par::worth(work, crate::par::MACS) {
        out.chunks_mut(chunk).enumerate().for_each(|(bh, o)| f(bh, o));
    } else {
        out.par_chunks_mut(chunk).enumerate().for_each(|(bh, o)| f(bh, o));
    }
}

/// What a modifier call needs besides its input: the `(B, Hq, L, S)` shape, the softmax type
/// C, the node's outer-scope values and the run context.
struct ModCall<'a> {
    shape: [usize; 4],
    c: Rnd,
    outer: &'a [Option<&'a Value>],
    ctx: &'a RunContext,
}

impl ModCall<'_> {
    /// Runs modifier `name` on values `x` of type C; the result is cast to C.
    fn run(&self, body: &Body, name: &str, x: Vec<f64>) -> Result<Vec<f64>> {
        let (shape, c) = (&self.shape[..], self.c);
        let input: Value = store(c.dtype(), shape, &x)?.into();
        let out = body.run(&[&input], self.outer, self.ctx)?;
        let y =
            out.into_iter().next().ok_or_else(|| Error::invalid(format!("{name} gave no output")))?.into_tensor()?;
        if y.shape() != shape {
            return Err(Error::invalid(format!("{name} returned shape {:?}, not its input's {shape:?}", y.shape())));
        }
        Ok(c.apply_all(y.to_f64_vec()?))
    }
}

impl Kernel for FlexAttention {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let (q, k, v) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        let t = Rnd::of(q.dtype())?;
        if k.dtype() != q.dtype() || v.dtype() != q.dtype() {
            return Err(Error::invalid(format!(
                "Q, K, V must share one element type, got {}, {}, {}",
                q.dtype(),
                k.dtype(),
                v.dtype()
            )));
        }
        let dims = Dims::of(q.shape(), k.shape(), v.shape())?;
        let Dims { b, hq, l, s, e, ev, .. } = dims;
        let outer = inputs.get(self.explicit..).unwrap_or(&[]);
        let c = self.softmax_prec.unwrap_or(if t == Rnd::F64 { Rnd::F64 } else { Rnd::F32 });

        // The reference takes √scale of an f32 scale in f32, then casts it to T.
        let scale = self.scale.map_or_else(|| 1.0 / (e as f64).sqrt(), f64::from);
        let sc = t.r(f64::from((scale as f32).sqrt()));
        let qs: Vec<f64> = q.to_f64_vec()?.into_iter().map(|x| t.r(x * sc)).collect();
        let ks: Vec<f64> = k.to_f64_vec()?.into_iter().map(|x| t.r(x * sc)).collect();

        let call = ModCall { shape: [b, hq, l, s], c, outer, ctx };
        let mut scores = vec![0.0; b * hq * l * s];
        per_head(&mut scores, l * s, b * hq * l * s * e, |bh, out| {
            let qh = &qs[bh * l * e..(bh + 1) * l * e];
            let kh = &ks[dims.kv(bh) * s * e..(dims.kv(bh) + 1) * s * e];
            for (o, (i, j)) in out.iter_mut().zip((0..l).flat_map(|i| (0..s).map(move |j| (i, j)))) {
                let dot: f64 = qh[i * e..(i + 1) * e].iter().zip(&kh[j * e..(j + 1) * e]).map(|(a, b)| a * b).sum();
                *o = c.r(t.r(dot));
            }
        });
        if let Some(m) = &self.score_mod {
            scores = call.run(m, "score_mod", scores)?;
        }

        let mut probs = scores;
        if s > 0 {
            let row = |w: &mut [f64]| {
                if w.iter().all(|x| *x == f64::NEG_INFINITY) {
                    w.fill(f64::NAN);
                } else {
                    softmax(w, c);
                }
            };
            if !crate::par::worth(probs.len(), crate::par::ELEMENTS) {
                probs.chunks_mut(s).for_each(row);
            } else {
                probs.par_chunks_mut(s).for_each(row);
            }
        }
        if let Some(m) = &self.prob_mod {
            probs = call.run(m, "prob_mod", probs)?;
        }

        let vs: Vec<f64> = c.apply_all(v.to_f64_vec()?);
        let mut y = vec![0.0; b * hq * l * ev];
        per_head(&mut y, l * ev, b * hq * l * s * ev, |bh, out| {
            let p = &probs[bh * l * s..(bh + 1) * l * s];
            let vh = &vs[dims.kv(bh) * s * ev..(dims.kv(bh) + 1) * s * ev];
            for (i, yi) in out.chunks_mut(ev).enumerate() {
                for (j, pj) in p[i * s..(i + 1) * s].iter().enumerate() {
                    for (o, x) in yi.iter_mut().zip(&vh[j * ev..(j + 1) * ev]) {
                        *o += pj * x;
                    }
                }
                yi.iter_mut().for_each(|o| *o = c.r(*o));
            }
        });
        Ok(smallvec::smallvec![store(q.dtype(), &[b, hq, l, ev], &y)?.into()])
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vinort_ir::proto::build::{attr, dim, model, node, tensor_info};
    use vinort_ir::proto::onnx;
    use vinort_ir::proto::prost::Message;
    use vinort_ir::tensor_proto::tensor_to_proto;
    use vinort_ir::{Attr, DType, Model, Node, Tensor};

    use super::*;
    use crate::test_support::{self as ts, assert_close, expect_err, run_node, tensor};

    fn flex(attrs: Vec<(&str, Attr)>) -> Node {
        ts::op("FlexAttention", 1).domain("ai.onnx.preview").inputs(3).attrs(attrs).build()
    }

    fn run_flex(attrs: Vec<(&str, Attr)>, q: Tensor, k: Tensor, v: Tensor) -> Result<Tensor> {
        run_node(&flex(attrs), &[Some(q), Some(k), Some(v)]).map(|mut o| o.remove(0))
    }

    fn f64s(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec().unwrap_or_default()
    }

    #[test]
    fn softmax_weighs_values_by_hand() {
        // Scores 0 and ln 2 give weights 1/3 and 2/3: Y = 3/3 + 2·6/3 = 5.
        let q = tensor(DType::F64, &[1, 1, 1, 1], &[1.0]);
        let k = tensor(DType::F64, &[1, 1, 2, 1], &[0.0, 2f64.ln()]);
        let v = tensor(DType::F64, &[1, 1, 2, 1], &[3.0, 6.0]);
        let y = run_flex(vec![("scale", Attr::Float(1.0))], q, k, v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(y.dtype(), DType::F64);
        assert_close(&f64s(&y), &[5.0], 1e-12, 0.0, "Y");
    }

    #[test]
    fn default_scale_is_one_over_sqrt_head_size() {
        // E = 4: q·k1 = 4a with a = ln 3 / 2 is scaled by 1/2 to ln 3, weights 1/4 and 3/4.
        let a = 3f64.ln() / 2.0;
        let q = tensor(DType::F32, &[1, 1, 1, 4], &[1.0; 4]);
        let k = tensor(DType::F32, &[1, 1, 2, 4], &[0.0, 0.0, 0.0, 0.0, a, a, a, a]);
        let v = tensor(DType::F32, &[1, 1, 2, 1], &[0.0, 4.0]);
        let y = run_flex(vec![], q, k, v).unwrap_or_else(|e| panic!("{e}"));
        assert_close(&f64s(&y), &[3.0], 1e-6, 1e-6, "Y");
    }

    #[test]
    fn query_heads_share_kv_heads_in_contiguous_groups() {
        // One key per head, so each query head returns its KV head's value: heads 0, 1 read
        // KV head 0 and heads 2, 3 read KV head 1 (not h % 2).
        let q = tensor(DType::F32, &[1, 4, 1, 1], &[1.0; 4]);
        let k = tensor(DType::F32, &[1, 2, 1, 1], &[1.0, 1.0]);
        let v = tensor(DType::F32, &[1, 2, 1, 2], &[10.0, 11.0, 20.0, 21.0]);
        let y = run_flex(vec![], q, k, v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(y.shape(), &[1, 4, 1, 2]);
        assert_eq!(f64s(&y), [10.0, 11.0, 10.0, 11.0, 20.0, 21.0, 20.0, 21.0]);
    }

    #[test]
    fn half_inputs_give_half_output() {
        // Equal scores average the values: (1 + 2) / 2 = 1.5, exact in f16.
        let q = tensor(DType::F16, &[1, 1, 1, 2], &[0.3, -0.7]);
        let k = tensor(DType::F16, &[1, 1, 2, 2], &[0.5, 0.5, 0.5, 0.5]);
        let v = tensor(DType::F16, &[1, 1, 2, 1], &[1.0, 2.0]);
        let y = run_flex(vec![], q, k, v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(y.dtype(), DType::F16);
        assert_eq!(f64s(&y), [1.5]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let t = |shape: &[usize]| tensor(DType::F32, shape, &vec![0.5; shape.iter().product()]);
        expect_err(run_flex(vec![], t(&[1, 2, 1]), t(&[1, 2, 1]), t(&[1, 2, 1])), "rank-4");
        expect_err(run_flex(vec![], t(&[1, 3, 1, 2]), t(&[1, 2, 1, 2]), t(&[1, 2, 1, 2])), "multiple");
        expect_err(run_flex(vec![], t(&[1, 1, 1, 2]), t(&[1, 1, 1, 3]), t(&[1, 1, 1, 2])), "head size");
        expect_err(run_flex(vec![], t(&[1, 1, 1, 2]), t(&[1, 1, 2, 2]), t(&[1, 1, 3, 2])), "sequence length");
        let i = tensor(DType::I32, &[1, 1, 1, 1], &[1.0]);
        expect_err(run_flex(vec![], i.clone(), i.clone(), i), "float");
        let bad = vec![("softmax_precision", Attr::Int(7))];
        expect_err(run_flex(bad, t(&[1, 1, 1, 1]), t(&[1, 1, 1, 1]), t(&[1, 1, 1, 1])), "FlexAttention_test");
    }

    // ------------------------------------------------------------------ modifier subgraphs

    /// A one-node modifier `out = op(x, other)` over a `(B, H, L, S)` float tensor; `init` are
    /// its initializers (an `other` that is none of them is read from the outer scope).
    fn modifier(op: &str, other: &str, init: &[(&str, Tensor)]) -> onnx::GraphProto {
        let any = || ["B", "H", "L", "S"].map(dim::named);
        onnx::GraphProto {
            name: Some(format!("{op}_mod")),
            node: vec![node(op, &format!("{op}_in_mod"), &["x", other], &["out"])],
            input: vec![tensor_info("x", 1, any())],
            output: vec![tensor_info("out", 1, any())],
            initializer: init.iter().map(|(n, t)| tensor_to_proto(n, t)).collect(),
            ..Default::default()
        }
    }

    /// Runs a model holding one FlexAttention node with these graph attributes on f32 Q, K, V
    /// of the given shapes; `outer` are further graph inputs the modifiers may read.
    fn run_model(
        mods: Vec<onnx::AttributeProto>,
        qkv: [(&[usize], &[f64]); 3],
        outer: &[(&str, Tensor)],
    ) -> Result<Vec<f64>> {
        let info = |n: &str, s: &[usize]| tensor_info(n, 1, s.iter().map(|d| dim::fixed(*d as i64)));
        let names = ["Q", "K", "V"];
        let mut input: Vec<_> = names.iter().zip(&qkv).map(|(n, (s, _))| info(n, s)).collect();
        input.extend(outer.iter().map(|(n, t)| info(n, t.shape())));
        let flex = onnx::NodeProto {
            domain: Some("ai.onnx.preview".into()),
            attribute: mods,
            ..node("FlexAttention", "flex", &names, &["Y"])
        };
        let g = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![flex],
            input,
            output: vec![tensor_info("Y", 1, [])],
            ..Default::default()
        };
        let m = model(10, &[("", 26), ("ai.onnx.preview", 1)], g);
        let model = Model::from_bytes(m.encode_to_vec())?;
        let g = &model.graph;
        let plan = crate::provider::compile_nodes(
            g,
            g.topo_order(),
            g.inputs(),
            g.outputs(),
            crate::optimize::OptLevel::Disabled,
        )?;
        let mut values: Vec<Value> = qkv.iter().map(|(s, v)| tensor(DType::F32, s, v).into()).collect();
        values.extend(outer.iter().map(|(_, t)| t.clone().into()));
        let refs: Vec<&Value> = values.iter().collect();
        let y = plan.run(&refs, &RunContext::default())?.remove(0).into_tensor()?;
        y.to_f64_vec()
    }

    fn scalar(v: f64) -> Tensor {
        tensor(DType::F32, &[], &[v])
    }

    #[test]
    fn score_mod_masks_and_prob_mod_scales() {
        // Zero scores; the mask hides key 1 from query 0, so the weights are [1, 0] and
        // [1/2, 1/2], halved by prob_mod; with V = [2, 6]: Y = [1, 2].
        let mask = tensor(DType::F32, &[2, 2], &[0.0, f64::NEG_INFINITY, 0.0, 0.0]);
        let mods = vec![
            attr::graph("score_mod", modifier("Add", "mask", &[("mask", mask)])),
            attr::graph("prob_mod", modifier("Mul", "half", &[("half", scalar(0.5))])),
        ];
        let y = run_model(
            mods,
            [(&[1, 1, 2, 1], &[0.0, 0.0]), (&[1, 1, 2, 1], &[1.0, 1.0]), (&[1, 1, 2, 1], &[2.0, 6.0])],
            &[],
        );
        assert_close(&y.unwrap_or_else(|e| panic!("{e}")), &[1.0, 2.0], 1e-6, 0.0, "Y");
    }

    #[test]
    fn a_fully_masked_query_gives_nan_like_the_reference() {
        let mask = tensor(DType::F32, &[1, 2], &[f64::NEG_INFINITY; 2]);
        let mods = vec![attr::graph("score_mod", modifier("Add", "mask", &[("mask", mask)]))];
        let y =
            run_model(mods, [(&[1, 1, 1, 1], &[1.0]), (&[1, 1, 2, 1], &[1.0, 2.0]), (&[1, 1, 2, 1], &[1.0, 2.0])], &[]);
        assert!(y.unwrap_or_else(|e| panic!("{e}"))[0].is_nan());
    }

    #[test]
    fn outer_values_bind_by_name_across_both_modifiers() {
        // The node's implicit inputs are sorted over both subgraphs: [a_gain, z_bias]. Bias
        // [0, ln 3] gives weights [1/4, 3/4], the gain doubles them: Y = 2·4/4 + 2·3·8/4 = 14.
        let bias = tensor(DType::F32, &[1, 1, 1, 2], &[0.0, 3f64.ln()]);
        let mods = vec![
            attr::graph("score_mod", modifier("Add", "z_bias", &[])),
            attr::graph("prob_mod", modifier("Mul", "a_gain", &[])),
        ];
        let qkv: [(&[usize], &[f64]); 3] =
            [(&[1, 1, 1, 1], &[0.0]), (&[1, 1, 2, 1], &[1.0, 1.0]), (&[1, 1, 2, 1], &[4.0, 8.0])];
        let y = run_model(mods, qkv, &[("z_bias", bias), ("a_gain", scalar(2.0))]);
        assert_close(&y.unwrap_or_else(|e| panic!("{e}")), &[14.0], 1e-5, 0.0, "Y");
    }

    #[test]
    fn a_modifier_that_changes_the_shape_is_an_error() {
        // Adding a (1, 1, 1, 1, 1) tensor broadcasts the scores to rank 5.
        let extra = tensor(DType::F32, &[1, 1, 1, 1, 1], &[0.0]);
        let mods = vec![attr::graph("score_mod", modifier("Add", "e", &[("e", extra)]))];
        let one: &[f64] = &[1.0];
        let y = run_model(mods, [(&[1, 1, 1, 1], one), (&[1, 1, 1, 1], one), (&[1, 1, 1, 1], one)], &[]);
        expect_err(y, "score_mod returned shape");
    }

    // ------------------------------------------------------------------ against a naive model

    /// Plain f64 attention of `(B, Hq, L, E)` Q over `(B, Hkv, S, E|Ev)` K, V with GQA.
    fn naive(q: &[f64], k: &[f64], v: &[f64], (b, hq, hkv, l, s, e, ev): Shape7, scale: f64) -> Vec<f64> {
        let mut y = vec![0.0; b * hq * l * ev];
        for bi in 0..b {
            for h in 0..hq {
                let kh = bi * hkv + h / (hq / hkv);
                for i in 0..l {
                    let qi = &q[((bi * hq + h) * l + i) * e..][..e];
                    let sc: Vec<f64> = (0..s)
                        .map(|j| qi.iter().zip(&k[(kh * s + j) * e..][..e]).map(|(a, b)| a * b).sum::<f64>() * scale)
                        .collect();
                    let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = sc.iter().map(|x| (x - m).exp()).sum();
                    for c in 0..ev {
                        y[((bi * hq + h) * l + i) * ev + c] =
                            (0..s).map(|j| (sc[j] - m).exp() / z * v[(kh * s + j) * ev + c]).sum::<f64>();
                    }
                }
            }
        }
        y
    }

    type Shape7 = (usize, usize, usize, usize, usize, usize, usize);

    proptest! {
        #![proptest_config(ts::config(48))]
        #[test]
        fn matches_naive(
            b in 1usize..3, hkv in 1usize..3, rep in 1usize..4, l in 1usize..5, s in 1usize..6,
            e in 1usize..6, ev in 1usize..5, scaled in any::<bool>(), dt in 0usize..3, seed in any::<u64>(),
        ) {
            // f64 is only good to ~1e-7 here: the reference (and so the kernel) takes √scale
            // in f32 for every input type.
            let (dtype, tol) = [(DType::F32, 1e-5), (DType::F64, 1e-6), (DType::F16, 4e-3)][dt];
            let hq = hkv * rep;
            let mut x = seed | 1;
            let mut rnd = |n: usize| -> Vec<f64> {
                (0..n).map(|_| {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
                }).collect()
            };
            // The reference sees the inputs as the kernel does: rounded to the element type.
            let q = f64s(&tensor(dtype, &[b, hq, l, e], &rnd(b * hq * l * e)));
            let k = f64s(&tensor(dtype, &[b, hkv, s, e], &rnd(b * hkv * s * e)));
            let v = f64s(&tensor(dtype, &[b, hkv, s, ev], &rnd(b * hkv * s * ev)));
            let scale = if scaled { 0.3 } else { 1.0 / (e as f64).sqrt() };
            let want = naive(&q, &k, &v, (b, hq, hkv, l, s, e, ev), scale);
            let attrs = if scaled { vec![("scale", Attr::Float(0.3))] } else { vec![] };
            let y = run_flex(
                attrs,
                tensor(dtype, &[b, hq, l, e], &q),
                tensor(dtype, &[b, hkv, s, e], &k),
                tensor(dtype, &[b, hkv, s, ev], &v),
            ).map_err(|err| TestCaseError::fail(err.to_string()))?;
            prop_assert_eq!(y.shape(), &[b, hq, l, ev]);
            prop_assert_eq!(y.dtype(), dtype);
            ts::check_close(&f64s(&y), &want, tol, tol, "Y").map_err(TestCaseError::fail)?;
        }
    }
}
