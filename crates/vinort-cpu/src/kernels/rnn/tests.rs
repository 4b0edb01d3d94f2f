//! Tests of the recurrent kernels and DeformConv: the ONNX node cases end to end, hand-derived
//! values, property tests against naive scalar references written from the spec equations
//! (one batch entry and one time step at a time, sharing no code with the kernels), and bad
//! inputs that must fail with a clear error.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, Error, Node, Result, Tensor};

use super::activation::{self, Activation, Kind};
use crate::test_support::{
    self as ts, Cases, Known, Tol, check_close, config, expect_err, run_node, run_node_cases, tensor, tensor_of,
};

// ---------------------------------------------------------------------------------------------
// Harness

fn node(op: &str, opset: i64, inputs: &[bool], outputs: &[bool], attrs: Vec<(&str, Attr)>) -> Node {
    ts::op(op, opset).input_mask(inputs).output_mask(outputs).attrs(attrs).build()
}

fn f32s(shape: &[usize], v: &[f32]) -> Option<Tensor> {
    Some(tensor_of(shape, v))
}

/// Within `tol·(1 + |want|)`.
fn close(what: &str, got: &[f64], want: &[f64], tol: f64) -> std::result::Result<(), String> {
    check_close(got, want, tol, tol, what)
}

// ---------------------------------------------------------------------------------------------
// ONNX node cases

const CASES: &[&str] = &[
    "test_basic_deform_conv_with_padding",
    "test_basic_deform_conv_without_padding",
    "test_deform_conv_with_mask_bias",
    "test_deform_conv_with_multiple_offset_groups",
    "test_gru_batchwise",
    "test_gru_bidirectional",
    "test_gru_defaults",
    "test_gru_reverse",
    "test_gru_seq_length",
    "test_gru_with_initial_bias",
    "test_lstm_batchwise",
    "test_lstm_bidirectional",
    "test_lstm_defaults",
    "test_lstm_reverse",
    "test_lstm_with_initial_bias",
    "test_lstm_with_peepholes",
    "test_rnn_seq_length",
    "test_simple_rnn_batchwise",
    "test_simple_rnn_bidirectional",
    "test_simple_rnn_defaults",
    "test_simple_rnn_reverse",
    "test_simple_rnn_with_initial_bias",
];

#[test]
fn onnx_node_cases() {
    run_node_cases(Cases::Listed(CASES), &[], Tol { rtol: 1e-4, atol: 1e-4 });
}

// ---------------------------------------------------------------------------------------------
// Activations

#[test]
fn activation_values_match_the_spec_formulas() {
    let at = |k: Kind, x: f64| Activation::new(k).eval(x);
    assert_eq!(at(Kind::Relu, -2.0), 0.0);
    assert_eq!(at(Kind::Relu, 3.0), 3.0);
    assert_eq!(at(Kind::Sigmoid, 0.0), 0.5);
    assert_eq!(at(Kind::Tanh, 0.0), 0.0);
    assert_eq!(at(Kind::Affine, 2.5), 2.5); // alpha 1, beta 0
    assert_eq!(at(Kind::LeakyRelu, -1.0), -0.01f32 as f64);
    assert_eq!(at(Kind::ThresholdedRelu, 0.5), 0.0);
    assert_eq!(at(Kind::ThresholdedRelu, 1.0), 1.0); // x >= alpha keeps x
    assert_eq!(at(Kind::HardSigmoid, 0.0), 0.5);
    assert_eq!(at(Kind::HardSigmoid, 10.0), 1.0);
    assert_eq!(at(Kind::HardSigmoid, -10.0), 0.0);
    assert!((at(Kind::Elu, -1.0) - (f64::exp(-1.0) - 1.0)).abs() < 1e-15);
    assert_eq!(at(Kind::Softsign, 1.0), 0.5);
    assert!((at(Kind::Softplus, 0.0) - std::f64::consts::LN_2).abs() < 1e-15);
    // Large inputs must not overflow through e^x.
    assert_eq!(at(Kind::Softplus, 1000.0), 1000.0);
    assert!((at(Kind::ScaledTanh, 0.5) - 0.5f64.tanh()).abs() < 1e-15);
    let scaled = Activation { kind: Kind::ScaledTanh, alpha: 2.0, beta: 0.5 };
    assert!((scaled.eval(1.0f64) - 2.0 * 0.5f64.tanh()).abs() < 1e-15);
}

#[test]
fn activation_parameters_are_consumed_in_order_by_the_functions_that_take_them() {
    let n = node(
        "LSTM",
        22,
        &[true; 3],
        &[true],
        vec![
            ("activations", Attr::Strings(vec!["hardsigmoid".into(), "Tanh".into(), "LEAKYRELU".into()])),
            ("activation_alpha", Attr::Floats(vec![0.3, 0.1])),
            ("activation_beta", Attr::Floats(vec![0.6])),
        ],
    );
    let acts = activation::parse(&n, &[Kind::Sigmoid, Kind::Tanh, Kind::Tanh], 2).expect("valid activations");
    let want = [
        Activation { kind: Kind::HardSigmoid, alpha: 0.3, beta: 0.6 },
        Activation { kind: Kind::Tanh, alpha: 0.0, beta: 0.0 },
        Activation { kind: Kind::LeakyRelu, alpha: 0.1, beta: 0.0 },
    ];
    // Three names for a bidirectional node: the same functions in both directions.
    assert_eq!(acts, [want, want].concat());
    // A listed function without a value gets its ONNX default.
    let n = node("RNN", 22, &[true; 3], &[true], vec![("activations", Attr::Strings(vec!["LeakyRelu".into()]))]);
    assert_eq!(activation::parse(&n, &[Kind::Tanh], 1).expect("valid")[0].alpha, 0.01);
}

#[test]
fn unknown_activation_names_and_counts_are_rejected() {
    let n = node(
        "GRU",
        22,
        &[true; 3],
        &[true],
        vec![("activations", Attr::Strings(vec!["Sigmoid".into(), "Swish".into()]))],
    );
    let x = f32s(&[1, 1, 1], &[1.0]);
    let w = f32s(&[1, 3, 1], &[1.0; 3]);
    let r = f32s(&[1, 3, 1], &[1.0; 3]);
    expect_err(run_node(&n, &[x.clone(), w.clone(), r.clone()]), "unknown activation function 'Swish'");
    let n = node("GRU", 22, &[true; 3], &[true], vec![("activations", Attr::Strings(vec!["Sigmoid".into()]))]);
    expect_err(run_node(&n, &[x, w, r]), "lists 1 functions");
}

// ---------------------------------------------------------------------------------------------
// Hand-derived recurrences

#[test]
fn rnn_relu_by_hand() {
    // h1 = relu(2 * 1 + 0.5 * 0 + 1) = 3, h2 = relu(2 * 2 + 0.5 * 3 + 1) = 6.5,
    // h3 = relu(2 * -5 + 0.5 * 6.5 + 1) = relu(-5.75) = 0.
    let n = node(
        "RNN",
        14,
        &[true; 4],
        &[true, true],
        vec![("hidden_size", Attr::Int(1)), ("activations", Attr::Strings(vec!["Relu".into()]))],
    );
    let out = run_node(
        &n,
        &[
            f32s(&[3, 1, 1], &[1.0, 2.0, -5.0]),
            f32s(&[1, 1, 1], &[2.0]),
            f32s(&[1, 1, 1], &[0.5]),
            f32s(&[1, 2], &[1.0, 0.0]),
        ],
    )
    .expect("RNN runs");
    assert_eq!(out[0].shape(), [3, 1, 1, 1]);
    assert_eq!(out[0].to_vec::<f32>().expect("f32"), [3.0, 6.5, 0.0]);
    assert_eq!(out[1].to_vec::<f32>().expect("f32"), [0.0]);
}

#[test]
fn lstm_with_zero_weights_by_hand() {
    // With W = R = 0 every gate sees only its bias: i = σ(0) = 0.5, o = σ(0) = 0.5,
    // f = σ(ln 3) = 0.75, c̃ = tanh(atanh 0.5) = 0.5.
    // C1 = 0.75 * 2 + 0.5 * 0.5 = 1.75, H1 = 0.5 * tanh(1.75);
    // C2 = 0.75 * 1.75 + 0.25 = 1.5625, H2 = 0.5 * tanh(1.5625).
    let n = node("LSTM", 22, &[true; 7], &[true, true, true], vec![("hidden_size", Attr::Int(1))]);
    let mut b = vec![0.0f64; 8];
    b[2] = 3f64.ln();
    b[3] = 0.5f64.atanh();
    let out = run_node(
        &n,
        &[
            Some(tensor(DType::F64, &[2, 1, 1], &[7.0, -3.0])),
            Some(tensor(DType::F64, &[1, 4, 1], &[0.0; 4])),
            Some(tensor(DType::F64, &[1, 4, 1], &[0.0; 4])),
            Some(tensor(DType::F64, &[1, 8], &b)),
            None,
            None,
            Some(tensor(DType::F64, &[1, 1, 1], &[2.0])),
        ],
    )
    .expect("LSTM runs");
    let y = out[0].to_vec::<f64>().expect("f64");
    close("Y", &y, &[0.5 * 1.75f64.tanh(), 0.5 * 1.5625f64.tanh()], 1e-12).expect("Y");
    close("Y_c", &out[2].to_vec::<f64>().expect("f64"), &[1.5625], 1e-12).expect("Y_c");
}

// ---------------------------------------------------------------------------------------------
// Naive recurrent reference

const ACT_NAMES: [&str; 11] = [
    "Relu",
    "Tanh",
    "Sigmoid",
    "Affine",
    "LeakyRelu",
    "ThresholdedRelu",
    "ScaledTanh",
    "HardSigmoid",
    "Elu",
    "Softsign",
    "Softplus",
];

/// One activation written straight from the operator documentation's table.
fn ref_act(name: &str, a: f64, b: f64, x: f64) -> f64 {
    match name {
        "Relu" => x.max(0.0),
        // The table's (1 - e^-2x) / (1 + e^-2x), on |x| so a large negative x does not give
        // inf / inf.
        "Tanh" => x.signum() * (1.0 - (-2.0 * x.abs()).exp()) / (1.0 + (-2.0 * x.abs()).exp()),
        "Sigmoid" => 1.0 / (1.0 + (-x).exp()),
        "Affine" => a * x + b,
        "LeakyRelu" => {
            if x >= 0.0 {
                x
            } else {
                a * x
            }
        }
        "ThresholdedRelu" => {
            if x >= a {
                x
            } else {
                0.0
            }
        }
        "ScaledTanh" => a * (b * x).tanh(),
        "HardSigmoid" => (a * x + b).clamp(0.0, 1.0),
        "Elu" => {
            if x >= 0.0 {
                x
            } else {
                a * (x.exp() - 1.0)
            }
        }
        "Softsign" => x / (1.0 + x.abs()),
        // ln(1 + e^x), written so a large x does not overflow e^x.
        "Softplus" => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        other => panic!("reference: unknown activation {other}"),
    }
}

fn takes_alpha(name: &str) -> bool {
    matches!(name, "Affine" | "LeakyRelu" | "ThresholdedRelu" | "ScaledTanh" | "HardSigmoid" | "Elu")
}

fn takes_beta(name: &str) -> bool {
    matches!(name, "Affine" | "ScaledTanh" | "HardSigmoid")
}

#[derive(Clone, Debug)]
struct Rec {
    op: &'static str,
    lbr: bool,
    input_forget: bool,
    dir: &'static str,
    layout: usize,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    /// Resolved (name, alpha, beta) per function slot, all directions; None: defaults.
    acts: Option<Vec<(&'static str, f64, f64)>>,
    clip: Option<f64>,
    x: Vec<f64>,
    w: Vec<f64>,
    r: Vec<f64>,
    b: Option<Vec<f64>>,
    lens: Option<Vec<usize>>,
    h0: Option<Vec<f64>>,
    c0: Option<Vec<f64>>,
    p: Option<Vec<f64>>,
}

impl Rec {
    fn gates(&self) -> usize {
        match self.op {
            "RNN" => 1,
            "GRU" => 3,
            _ => 4,
        }
    }

    fn dirs(&self) -> usize {
        if self.dir == "bidirectional" { 2 } else { 1 }
    }

    fn x_at(&self, t: usize, b: usize, i: usize) -> f64 {
        let (s, n, k) = (self.seq, self.batch, self.input);
        if self.layout == 0 { self.x[(t * n + b) * k + i] } else { self.x[(b * s + t) * k + i] }
    }

    fn state_at(&self, v: &Option<Vec<f64>>, d: usize, b: usize, j: usize) -> f64 {
        let (nd, n, h) = (self.dirs(), self.batch, self.hidden);
        v.as_ref().map_or(0.0, |v| if self.layout == 0 { v[(d * n + b) * h + j] } else { v[(b * nd + d) * h + j] })
    }

    /// Pre-activation of gate row `row` (gate * hidden + j) for direction d: W x + R h + Wb + Rb.
    fn projection(&self, d: usize, row: usize, x: &[f64], h: &[f64], with_rb: bool) -> f64 {
        let (gh, k, hs) = (self.gates() * self.hidden, self.input, self.hidden);
        let mut s = 0.0;
        for (i, xv) in x.iter().enumerate() {
            s += self.w[(d * gh + row) * k + i] * xv;
        }
        for (i, hv) in h.iter().enumerate() {
            s += self.r[(d * gh + row) * hs + i] * hv;
        }
        if let Some(b) = &self.b {
            s += b[d * 2 * gh + row];
            if with_rb {
                s += b[d * 2 * gh + gh + row];
            }
        }
        s
    }

    /// Y `[seq][dir][batch][hidden]`, Y_h and Y_c `[dir][batch][hidden]`, all in layout-0 order.
    fn reference(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (nd, n, hs, s) = (self.dirs(), self.batch, self.hidden, self.seq);
        let mut y = vec![0.0; s * nd * n * hs];
        let mut yh = vec![0.0; nd * n * hs];
        let mut yc = vec![0.0; nd * n * hs];
        let per = match self.op {
            "RNN" => 1,
            "GRU" => 2,
            _ => 3,
        };
        let defaults: &[&'static str] = match self.op {
            "RNN" => &["Tanh"],
            "GRU" => &["Sigmoid", "Tanh"],
            _ => &["Sigmoid", "Tanh", "Tanh"],
        };
        let clip = |v: f64| self.clip.map_or(v, |c| v.clamp(-c, c));
        for d in 0..nd {
            let act = |slot: usize, v: f64| match &self.acts {
                Some(a) => {
                    let (name, al, be) = a[d * per + slot];
                    ref_act(name, al, be, v)
                }
                None => ref_act(defaults[slot], 0.0, 0.0, v),
            };
            let reverse = self.dir == "reverse" || d == 1;
            for b in 0..n {
                let len = self.lens.as_ref().map_or(s, |l| l[b]);
                let mut h: Vec<f64> = (0..hs).map(|j| self.state_at(&self.h0, d, b, j)).collect();
                let mut c: Vec<f64> = (0..hs).map(|j| self.state_at(&self.c0, d, b, j)).collect();
                let steps: Vec<usize> = if reverse { (0..len).rev().collect() } else { (0..len).collect() };
                for t in steps {
                    let x: Vec<f64> = (0..self.input).map(|i| self.x_at(t, b, i)).collect();
                    let next: Vec<f64> = match self.op {
                        "RNN" => (0..hs).map(|j| act(0, clip(self.projection(d, j, &x, &h, true)))).collect(),
                        "GRU" => {
                            let z: Vec<f64> =
                                (0..hs).map(|j| act(0, clip(self.projection(d, j, &x, &h, true)))).collect();
                            let r: Vec<f64> =
                                (0..hs).map(|j| act(0, clip(self.projection(d, hs + j, &x, &h, true)))).collect();
                            let cand: Vec<f64> = (0..hs)
                                .map(|j| {
                                    let row = 2 * hs + j;
                                    let pre = if self.lbr {
                                        // Wh x + Wbh + r ⊙ (Rh h + Rbh)
                                        let wx = self.projection(d, row, &x, &vec![0.0; hs], false);
                                        let rh = self.projection(d, row, &vec![0.0; self.input], &h, false)
                                            - self.b.as_ref().map_or(0.0, |bb| bb[d * 2 * 3 * hs + row]);
                                        let rbh = self.b.as_ref().map_or(0.0, |bb| bb[d * 2 * 3 * hs + 3 * hs + row]);
                                        wx + r[j] * (rh + rbh)
                                    } else {
                                        let rh: Vec<f64> = (0..hs).map(|i| r[i] * h[i]).collect();
                                        self.projection(d, row, &x, &rh, true)
                                    };
                                    act(1, clip(pre))
                                })
                                .collect();
                            (0..hs).map(|j| (1.0 - z[j]) * cand[j] + z[j] * h[j]).collect()
                        }
                        _ => {
                            let peep = |k: usize, j: usize| self.p.as_ref().map_or(0.0, |p| p[d * 3 * hs + k * hs + j]);
                            let mut hn = vec![0.0; hs];
                            for j in 0..hs {
                                let i = act(0, clip(self.projection(d, j, &x, &h, true) + peep(0, j) * c[j]));
                                let f = if self.input_forget {
                                    1.0 - i
                                } else {
                                    act(0, clip(self.projection(d, 2 * hs + j, &x, &h, true) + peep(2, j) * c[j]))
                                };
                                let g = act(1, clip(self.projection(d, 3 * hs + j, &x, &h, true)));
                                let cn = f * c[j] + i * g;
                                let o = act(0, clip(self.projection(d, hs + j, &x, &h, true) + peep(1, j) * cn));
                                c[j] = cn;
                                hn[j] = o * act(2, cn);
                            }
                            hn
                        }
                    };
                    h = next;
                    for j in 0..hs {
                        y[((t * nd + d) * n + b) * hs + j] = h[j];
                    }
                }
                for j in 0..hs {
                    yh[(d * n + b) * hs + j] = h[j];
                    yc[(d * n + b) * hs + j] = c[j];
                }
            }
        }
        (y, yh, yc)
    }

    fn node(&self, outputs: &[bool]) -> Node {
        let mut attrs =
            vec![("hidden_size", Attr::Int(self.hidden as i64)), ("direction", Attr::String(self.dir.into()))];
        if self.layout == 1 {
            attrs.push(("layout", Attr::Int(1)));
        }
        if let Some(c) = self.clip {
            attrs.push(("clip", Attr::Float(c as f32)));
        }
        if self.lbr {
            attrs.push(("linear_before_reset", Attr::Int(1)));
        }
        if self.input_forget {
            attrs.push(("input_forget", Attr::Int(1)));
        }
        if let Some(a) = &self.acts {
            attrs.push(("activations", Attr::Strings(a.iter().map(|(n, _, _)| n.to_string()).collect())));
            let alphas = a.iter().filter(|(n, _, _)| takes_alpha(n)).map(|(_, al, _)| *al as f32).collect();
            let betas = a.iter().filter(|(n, _, _)| takes_beta(n)).map(|(_, _, be)| *be as f32).collect();
            attrs.push(("activation_alpha", Attr::Floats(alphas)));
            attrs.push(("activation_beta", Attr::Floats(betas)));
        }
        let n_in = if self.op == "LSTM" { 8 } else { 6 };
        node(self.op, 22, &vec![true; n_in], outputs, attrs)
    }

    fn inputs(&self, dtype: DType) -> Vec<Option<Tensor>> {
        let (nd, n, hs, gh) = (self.dirs(), self.batch, self.hidden, self.gates() * self.hidden);
        let x_shape = if self.layout == 0 { [self.seq, n, self.input] } else { [n, self.seq, self.input] };
        let st_shape = if self.layout == 0 { [nd, n, hs] } else { [n, nd, hs] };
        let mut v = vec![
            Some(tensor(dtype, &x_shape, &self.x)),
            Some(tensor(dtype, &[nd, gh, self.input], &self.w)),
            Some(tensor(dtype, &[nd, gh, hs], &self.r)),
            self.b.as_ref().map(|b| tensor(dtype, &[nd, 2 * gh], b)),
            self.lens
                .as_ref()
                .map(|l| Tensor::from_vec(&[n], l.iter().map(|v| *v as i32).collect()).expect("lens tensor")),
            self.h0.as_ref().map(|h| tensor(dtype, &st_shape, h)),
        ];
        if self.op == "LSTM" {
            v.push(self.c0.as_ref().map(|c| tensor(dtype, &st_shape, c)));
            v.push(self.p.as_ref().map(|p| tensor(dtype, &[nd, 3 * hs], p)));
        }
        v
    }

    /// Rounds every float array to `dtype`, so the reference sees what the kernel sees.
    fn rounded(mut self, dtype: DType) -> Rec {
        let round = |v: &mut Vec<f64>| {
            let n = v.len();
            *v = tensor(dtype, &[n], v).to_f64_vec().expect("float tensor");
        };
        round(&mut self.x);
        round(&mut self.w);
        round(&mut self.r);
        for o in [&mut self.b, &mut self.h0, &mut self.c0, &mut self.p].into_iter().flatten() {
            round(o);
        }
        self
    }
}

fn random_vec(rng: &mut StdRng, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(-1.0..1.0) * scale).collect()
}

/// A random recurrent problem: `kind` picks RNN / GRU / GRU(lbr) / LSTM / LSTM(input_forget),
/// `opts` bits switch on B, initial states, sequence_lens, peepholes, clip and custom activations;
/// bit 6 makes it wide (hidden 30–70, batch up to 5, input up to 40: gate rows of several
/// 16-column blocks, batches past the few-row kernel's 3 rows).
fn random_rec(seed: u64, kind: usize, dir: usize, layout: usize, opts: u32) -> Rec {
    let mut rng = StdRng::seed_from_u64(seed);
    let (op, lbr, input_forget) = [
        ("RNN", false, false),
        ("GRU", false, false),
        ("GRU", true, false),
        ("LSTM", false, false),
        ("LSTM", false, true),
    ][kind];
    let dir = ["forward", "reverse", "bidirectional"][dir];
    let wide = opts & (1 << 6) != 0;
    let (seq, batch, input, hidden) = if wide {
        (rng.random_range(1..4), rng.random_range(1..6), rng.random_range(1..40), rng.random_range(30..70))
    } else {
        (rng.random_range(1..5), rng.random_range(1..4), rng.random_range(1..5), rng.random_range(1..5))
    };
    // Wide sums keep their pre-activations off the activations' flat tails.
    let scale = if wide { 0.15 } else { 0.8 };
    let nd = if dir == "bidirectional" { 2 } else { 1 };
    let gates = match op {
        "RNN" => 1,
        "GRU" => 3,
        _ => 4,
    };
    let per = match op {
        "RNN" => 1,
        "GRU" => 2,
        _ => 3,
    };
    let gh = gates * hidden;
    let on = |bit: u32| opts & (1 << bit) != 0;
    let acts = on(5).then(|| {
        (0..nd * per)
            .map(|_| {
                let name = ACT_NAMES[rng.random_range(0..ACT_NAMES.len())];
                // f32 values, so the attribute (an f32) and the reference agree exactly.
                (name, rng.random_range(0.1f32..1.5) as f64, rng.random_range(-0.5f32..0.5) as f64)
            })
            .collect::<Vec<_>>()
    });
    Rec {
        op,
        lbr,
        input_forget,
        dir,
        layout,
        seq,
        batch,
        input,
        hidden,
        acts,
        clip: on(4).then(|| rng.random_range(0.2f32..1.5) as f64),
        x: random_vec(&mut rng, seq * batch * input, 1.0),
        w: random_vec(&mut rng, nd * gh * input, scale),
        r: random_vec(&mut rng, nd * gh * hidden, scale),
        b: on(0).then(|| random_vec(&mut rng, nd * 2 * gh, 0.5)),
        h0: on(1).then(|| random_vec(&mut rng, nd * batch * hidden, 1.0)),
        c0: (on(1) && op == "LSTM").then(|| random_vec(&mut rng, nd * batch * hidden, 1.0)),
        lens: on(2).then(|| (0..batch).map(|_| rng.random_range(0..=seq)).collect()),
        p: (on(3) && op == "LSTM").then(|| random_vec(&mut rng, nd * 3 * hidden, 0.8)),
    }
}

/// Layout-0 `[a, b, c, ...]` data reordered as the kernel's layout-1 output.
fn to_layout1(v: &[f64], outer: usize, mid: usize, inner: usize) -> Vec<f64> {
    // [outer, mid, inner] -> [mid, outer, inner]
    let mut o = Vec::with_capacity(v.len());
    for m in 0..mid {
        for a in 0..outer {
            o.extend_from_slice(&v[(a * mid + m) * inner..(a * mid + m + 1) * inner]);
        }
    }
    o
}

fn check_rec(rec: Rec, dtype: DType, tol: f64) -> std::result::Result<(), String> {
    check_rec_with(rec, dtype, tol, Known::Types)
}

/// [`check_rec`] with `known` telling the kernel what it knows when built (W and R constant:
/// f32 weights are packed once).
fn check_rec_with(rec: Rec, dtype: DType, tol: f64, known: Known<'_>) -> std::result::Result<(), String> {
    let rec = rec.rounded(dtype);
    let lstm = rec.op == "LSTM";
    let outputs = if lstm { vec![true; 3] } else { vec![true; 2] };
    let got = ts::run_with(&rec.node(&outputs), &rec.inputs(dtype), known).map_err(|e| e.to_string())?;
    let (mut y, mut yh, mut yc) = rec.reference();
    let (s, nd, n, hs) = (rec.seq, rec.dirs(), rec.batch, rec.hidden);
    let (y_shape, st_shape) = if rec.layout == 0 {
        (vec![s, nd, n, hs], vec![nd, n, hs])
    } else {
        y = to_layout1(&y, s * nd, n, hs);
        yh = to_layout1(&yh, nd, n, hs);
        yc = to_layout1(&yc, nd, n, hs);
        (vec![n, s, nd, hs], vec![n, nd, hs])
    };
    let want = if lstm {
        vec![(y, y_shape), (yh, st_shape.clone()), (yc, st_shape)]
    } else {
        vec![(y, y_shape), (yh, st_shape)]
    };
    for (i, (g, (w, shape))) in got.iter().zip(&want).enumerate() {
        if g.dtype() != dtype || g.shape() != shape.as_slice() {
            return Err(format!("output {i}: got {}{:?}, want {dtype}{shape:?}", g.dtype(), g.shape()));
        }
        close(&format!("output {i}"), &g.to_f64_vec().map_err(|e| e.to_string())?, w, tol)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(160))]

    #[test]
    fn recurrent_f64_matches_reference(seed in any::<u64>(), kind in 0usize..5, dir in 0usize..3, layout in 0usize..2, opts in 0u32..64) {
        let rec = random_rec(seed, kind, dir, layout, opts);
        prop_assert!(check_rec(rec.clone(), DType::F64, 1e-10).is_ok(), "{:?}\n{:?}", check_rec(rec.clone(), DType::F64, 1e-10), rec);
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Also with W and R constant, which packs f32 weights for the packed product kernels, and
    /// wide (opts bit 6).
    #[test]
    fn recurrent_f32_f16_bf16_match_reference(seed in any::<u64>(), kind in 0usize..5, dir in 0usize..3, layout in 0usize..2, opts in 0u32..128, t in 0usize..3, konst in any::<bool>()) {
        let (dtype, tol) = [(DType::F32, 1e-4), (DType::F16, 1e-2), (DType::BF16, 5e-2)][t];
        let rec = random_rec(seed, kind, dir, layout, opts);
        let known = if konst { Known::TypesAndConsts(&[1, 2]) } else { Known::Types };
        let r = check_rec_with(rec.clone(), dtype, tol, known);
        prop_assert!(r.is_ok(), "{:?}\n{:?}", r, rec);
    }
}

/// A case the random search found: LeakyRelu gates let the cell state reach -400, where the
/// reference's tanh once read inf / inf.
#[test]
fn lstm_with_a_large_cell_state_matches_reference() {
    let rec = random_rec(11204304589097824767, 4, 0, 0, 42);
    check_rec(rec, DType::F32, 1e-4).expect("LSTM with LeakyRelu gates");
}

#[test]
fn only_requested_outputs_are_produced_and_lens_zero_keeps_the_initial_state() {
    let mut rec = random_rec(7, 3, 2, 0, 0b0010_0011);
    rec.lens = Some(vec![0; rec.batch]);
    let (_, yh, yc) = rec.reference();
    // Y omitted: the kernel returns a placeholder in its slot and still fills Y_h, Y_c.
    let got = run_node(&rec.node(&[false, true, true]), &rec.inputs(DType::F64)).expect("LSTM runs");
    assert_eq!(got.len(), 3);
    close("Y_h", &got[1].to_f64_vec().expect("f64"), &yh, 1e-12).expect("Y_h");
    close("Y_c", &got[2].to_f64_vec().expect("f64"), &yc, 1e-12).expect("Y_c");
    close("Y_h = initial_h", &yh, rec.h0.as_ref().expect("initial_h"), 0.0).expect("initial state kept");
}

#[test]
fn empty_sequence_gives_empty_y_and_initial_state() {
    let mut rec = random_rec(3, 1, 0, 0, 0b10);
    rec.seq = 0;
    rec.x.clear();
    let got = run_node(&rec.node(&[true, true]), &rec.inputs(DType::F32)).expect("GRU runs");
    assert_eq!(got[0].shape(), [0, 1, rec.batch, rec.hidden]);
    let h0 = tensor(DType::F32, &[rec.h0.as_ref().map_or(0, Vec::len)], rec.h0.as_ref().expect("h0"));
    close("Y_h", &got[1].to_f64_vec().expect("f32"), &h0.to_f64_vec().expect("f32"), 0.0).expect("Y_h");
}

#[test]
fn bad_recurrent_inputs_are_rejected() {
    let rec = random_rec(11, 3, 0, 0, 0b0101);
    let good = rec.inputs(DType::F32);
    let n = rec.node(&[true, true, true]);
    assert!(run_node(&n, &good).is_ok());

    let mut bad = good.clone();
    bad[4] = Some(Tensor::from_vec(&[rec.batch], vec![rec.seq as i32 + 1; rec.batch]).expect("lens"));
    expect_err(run_node(&n, &bad), "sequence_lens value");

    let mut bad = good.clone();
    bad[1] = Some(tensor(DType::F32, &[1, 3 * rec.hidden, rec.input], &vec![0.0; 3 * rec.hidden * rec.input]));
    expect_err(run_node(&n, &bad), "input W has shape");

    let mut bad = good.clone();
    bad[2] = Some(tensor(DType::F64, &[1, 4 * rec.hidden, rec.hidden], &vec![0.0; 4 * rec.hidden * rec.hidden]));
    expect_err(run_node(&n, &bad), &format!("input R is {} but X is {}", DType::F64, DType::F32));

    let mut bad = good.clone();
    bad[0] = Some(tensor(DType::F32, &[rec.seq, rec.batch], &vec![0.0; rec.seq * rec.batch]));
    expect_err(run_node(&n, &bad), "must have rank 3");

    let mut m = n.clone();
    m.attrs.retain(|(k, _)| k != "hidden_size");
    m.attrs.push(("hidden_size".into(), Attr::Int(rec.hidden as i64 + 1)));
    expect_err(run_node(&m, &good), "hidden_size");

    let mut m = n.clone();
    m.attrs.retain(|(k, _)| k != "direction");
    m.attrs.push(("direction".into(), Attr::String("sideways".into())));
    expect_err(run_node(&m, &good), "'direction' must be forward, reverse or bidirectional");

    // Bidirectional attributes with single-direction weights.
    let mut m = n.clone();
    m.attrs.retain(|(k, _)| k != "direction");
    m.attrs.push(("direction".into(), Attr::String("bidirectional".into())));
    expect_err(run_node(&m, &good), "num_directions");

    let ints = vec![Some(Tensor::from_vec(&[1, 1, 1], vec![1i32]).expect("int tensor")); 3];
    match run_node(&node("RNN", 22, &[true; 3], &[true], vec![]), &ints) {
        Err(Error::Unsupported(m)) => assert!(m.contains(&DType::I32.to_string()), "{m}"),
        other => panic!("int inputs must be refused as unsupported, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// DeformConv

#[test]
fn deform_conv_with_zero_offsets_is_a_convolution() {
    // X = 1..9 as 3x3, a 2x2 kernel of ones, zero offsets: each output is a 2x2 window sum.
    let x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    let n = node("DeformConv", 19, &[true; 3], &[true], vec![("kernel_shape", Attr::Ints(vec![2, 2]))]);
    let out = run_node(&n, &[f32s(&[1, 1, 3, 3], &x), f32s(&[1, 1, 2, 2], &[1.0; 4]), f32s(&[1, 8, 2, 2], &[0.0; 32])])
        .expect("DeformConv runs");
    assert_eq!(out[0].shape(), [1, 1, 2, 2]);
    assert_eq!(out[0].to_vec::<f32>().expect("f32"), [12.0, 16.0, 24.0, 28.0]);
}

#[test]
fn deform_conv_half_pixel_offset_by_hand() {
    // A 1x1 kernel moved by (0, 0.5) reads the mean of two horizontal neighbours; past the
    // right edge the missing neighbour counts as zero. Mask 2 doubles it, bias adds 1.
    let n = node("DeformConv", 22, &[true; 5], &[true], vec![]);
    let off = [0.0f32, 0.0, 0.5, 0.5];
    let out = run_node(
        &n,
        &[
            f32s(&[1, 1, 1, 2], &[2.0, 4.0]),
            f32s(&[1, 1, 1, 1], &[1.0]),
            f32s(&[1, 2, 1, 2], &off),
            f32s(&[1], &[1.0]),
            f32s(&[1, 1, 1, 2], &[2.0, 2.0]),
        ],
    )
    .expect("DeformConv runs");
    // (2 + 4) / 2 * 2 + 1 = 7; (4 + 0) / 2 * 2 + 1 = 5.
    assert_eq!(out[0].to_vec::<f32>().expect("f32"), [7.0, 5.0]);
}

#[derive(Debug, Clone)]
struct Deform {
    batch: usize,
    group: usize,
    cpg: usize,
    og: usize,
    ocg: usize,
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    pads: [usize; 4],
    in_hw: [usize; 2],
    x: Vec<f64>,
    w: Vec<f64>,
    off: Vec<f64>,
    mask: Option<Vec<f64>>,
    bias: Option<Vec<f64>>,
}

impl Deform {
    fn out_hw(&self) -> [usize; 2] {
        let o = |i: usize| {
            (self.in_hw[i] + self.pads[i] + self.pads[i + 2] - (self.k[i] - 1) * self.d[i] - 1) / self.s[i] + 1
        };
        [o(0), o(1)]
    }

    fn random(seed: u64) -> Deform {
        let mut rng = StdRng::seed_from_u64(seed);
        let group = rng.random_range(1..3);
        let cpg = rng.random_range(1..4);
        let channels = group * cpg;
        let ogs: Vec<usize> = (1..=channels).filter(|g| channels % g == 0).collect();
        let og = ogs[rng.random_range(0..ogs.len())];
        let k = [rng.random_range(1..4), rng.random_range(1..4)];
        let d = [rng.random_range(1..3), rng.random_range(1..3)];
        let s = [rng.random_range(1..3), rng.random_range(1..3)];
        let pads = [rng.random_range(0..2), rng.random_range(0..2), rng.random_range(0..2), rng.random_range(0..2)];
        let in_hw = [(k[0] - 1) * d[0] + 1 + rng.random_range(0..4), (k[1] - 1) * d[1] + 1 + rng.random_range(0..4)];
        let batch = rng.random_range(1..3);
        let ocg = rng.random_range(1..3);
        let mut me = Deform {
            batch,
            group,
            cpg,
            og,
            ocg,
            k,
            s,
            d,
            pads,
            in_hw,
            x: vec![],
            w: vec![],
            off: vec![],
            mask: None,
            bias: None,
        };
        let [oh, ow] = me.out_hw();
        let taps = k[0] * k[1];
        me.x = random_vec(&mut rng, batch * channels * in_hw[0] * in_hw[1], 1.0);
        me.w = random_vec(&mut rng, group * ocg * cpg * taps, 1.0);
        me.off = random_vec(&mut rng, batch * og * taps * 2 * oh * ow, 2.5);
        me.mask = rng
            .random_bool(0.5)
            .then(|| (0..batch * og * taps * oh * ow).map(|_| rng.random_range(0.0..1.0)).collect());
        me.bias = rng.random_bool(0.5).then(|| random_vec(&mut rng, group * ocg, 1.0));
        me
    }

    /// Direct loops over every output element, tap and channel.
    fn reference(&self) -> Vec<f64> {
        let channels = self.group * self.cpg;
        let oc = self.group * self.ocg;
        let [ih, iw] = self.in_hw;
        let [oh, ow] = self.out_hw();
        let [kh, kw] = self.k;
        let taps = kh * kw;
        let per_og = channels / self.og;
        let pix = |n: usize, c: usize, y: f64, x: f64| {
            if y < 0.0 || x < 0.0 || y > (ih - 1) as f64 || x > (iw - 1) as f64 {
                0.0
            } else {
                self.x[((n * channels + c) * ih + y as usize) * iw + x as usize]
            }
        };
        let mut out = vec![0.0; self.batch * oc * oh * ow];
        for n in 0..self.batch {
            for o in 0..oc {
                let g = o / self.ocg;
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut acc = self.bias.as_ref().map_or(0.0, |b| b[o]);
                        for ci in 0..self.cpg {
                            let c = g * self.cpg + ci;
                            let ogi = c / per_og;
                            for ki in 0..kh {
                                for kj in 0..kw {
                                    let tap = ki * kw + kj;
                                    let at = |ch: usize| {
                                        self.off[(((n * self.og + ogi) * taps + tap) * 2 + ch) * oh * ow + oy * ow + ox]
                                    };
                                    let py = (oy * self.s[0] + ki * self.d[0]) as f64 - self.pads[0] as f64 + at(0);
                                    let px = (ox * self.s[1] + kj * self.d[1]) as f64 - self.pads[1] as f64 + at(1);
                                    let (y0, x0) = (py.floor(), px.floor());
                                    let v = (y0 + 1.0 - py) * (x0 + 1.0 - px) * pix(n, c, y0, x0)
                                        + (y0 + 1.0 - py) * (px - x0) * pix(n, c, y0, x0 + 1.0)
                                        + (py - y0) * (x0 + 1.0 - px) * pix(n, c, y0 + 1.0, x0)
                                        + (py - y0) * (px - x0) * pix(n, c, y0 + 1.0, x0 + 1.0);
                                    let m = self.mask.as_ref().map_or(1.0, |m| {
                                        m[((n * self.og + ogi) * taps + tap) * oh * ow + oy * ow + ox]
                                    });
                                    acc += self.w[((o * self.cpg + ci) * kh + ki) * kw + kj] * v * m;
                                }
                            }
                        }
                        out[((n * oc + o) * oh + oy) * ow + ox] = acc;
                    }
                }
            }
        }
        out
    }

    fn run(&self, dtype: DType) -> Result<Vec<Tensor>> {
        let channels = self.group * self.cpg;
        let oc = self.group * self.ocg;
        let [oh, ow] = self.out_hw();
        let taps = self.k[0] * self.k[1];
        let ints = |v: &[usize]| Attr::Ints(v.iter().map(|x| *x as i64).collect());
        let n = node(
            "DeformConv",
            22,
            &[true; 5],
            &[true],
            vec![
                ("kernel_shape", ints(&self.k)),
                ("strides", ints(&self.s)),
                ("dilations", ints(&self.d)),
                ("pads", ints(&self.pads)),
                ("group", Attr::Int(self.group as i64)),
                ("offset_group", Attr::Int(self.og as i64)),
            ],
        );
        run_node(
            &n,
            &[
                Some(tensor(dtype, &[self.batch, channels, self.in_hw[0], self.in_hw[1]], &self.x)),
                Some(tensor(dtype, &[oc, self.cpg, self.k[0], self.k[1]], &self.w)),
                Some(tensor(dtype, &[self.batch, self.og * taps * 2, oh, ow], &self.off)),
                self.bias.as_ref().map(|b| tensor(dtype, &[oc], b)),
                self.mask.as_ref().map(|m| tensor(dtype, &[self.batch, self.og * taps, oh, ow], m)),
            ],
        )
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn deform_conv_matches_reference(seed in any::<u64>()) {
        let case = Deform::random(seed);
        let want = case.reference();
        let got = case.run(DType::F64).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let [oh, ow] = case.out_hw();
        prop_assert_eq!(got[0].shape(), &[case.batch, case.group * case.ocg, oh, ow][..]);
        let r = close("Y", &got[0].to_f64_vec().map_err(|e| TestCaseError::fail(e.to_string()))?, &want, 1e-10);
        prop_assert!(r.is_ok(), "{:?}\n{:?}", r, case);
        // f32 and f16 inputs give the same values up to their precision.
        let got = case.run(DType::F32).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let r = close("Y f32", &got[0].to_f64_vec().map_err(|e| TestCaseError::fail(e.to_string()))?, &want, 1e-4);
        prop_assert!(r.is_ok(), "{:?}\n{:?}", r, case);
    }
}

#[test]
fn bad_deform_conv_inputs_are_rejected() {
    let n = node("DeformConv", 22, &[true; 3], &[true], vec![("kernel_shape", Attr::Ints(vec![2, 2]))]);
    let x = f32s(&[1, 1, 3, 3], &[0.0; 9]);
    let w = f32s(&[1, 1, 2, 2], &[0.0; 4]);
    // The offset must have offset_group * kH * kW * 2 = 8 channels.
    expect_err(run_node(&n, &[x.clone(), w.clone(), f32s(&[1, 4, 2, 2], &[0.0; 16])]), "DeformConv offset has shape");
    // Its spatial shape must be the convolution's output shape.
    expect_err(run_node(&n, &[x.clone(), w.clone(), f32s(&[1, 8, 3, 3], &[0.0; 72])]), "expected [1, 8, 2, 2]");
    // kernel_shape must agree with W.
    let m = node("DeformConv", 22, &[true; 3], &[true], vec![("kernel_shape", Attr::Ints(vec![3, 3]))]);
    expect_err(run_node(&m, &[x.clone(), w.clone(), f32s(&[1, 8, 2, 2], &[0.0; 32])]), "kernel_shape");
    // Three channels cannot split into two offset groups.
    let m = node("DeformConv", 22, &[true; 3], &[true], vec![("offset_group", Attr::Int(2))]);
    expect_err(
        run_node(
            &m,
            &[f32s(&[1, 3, 3, 3], &[0.0; 27]), f32s(&[1, 3, 2, 2], &[0.0; 12]), f32s(&[1, 16, 2, 2], &[0.0; 64])],
        ),
        "offset groups",
    );
    let m = node("DeformConv", 22, &[true; 3], &[true], vec![("strides", Attr::Ints(vec![0, 1]))]);
    expect_err(run_node(&m, &[x.clone(), w.clone(), f32s(&[1, 8, 2, 2], &[0.0; 32])]), "attribute 'strides'");
    // 1-D inputs are refused as unsupported, not mis-run.
    match run_node(&n, &[f32s(&[1, 1, 3], &[0.0; 3]), f32s(&[1, 1, 2], &[0.0; 2]), f32s(&[1, 4, 2], &[0.0; 8])]) {
        Err(Error::Unsupported(m)) => assert!(m.contains("2-D"), "{m}"),
        other => panic!("1-D DeformConv must be refused, got {other:?}"),
    }
}
