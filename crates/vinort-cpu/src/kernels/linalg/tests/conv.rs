//! Conv and ConvTranspose against their definitions (https://onnx.ai/onnx/operators/onnx__Conv.html,
//! https://onnx.ai/onnx/operators/onnx__ConvTranspose.html).

use proptest::prelude::*;
use rand::Rng as _;
use vinort_ir::DType;

use super::*;

#[derive(Clone, Debug)]
struct Case {
    n: usize,
    c: usize,
    m: usize,
    group: usize,
    win: Window,
}

impl Case {
    /// `[n, c, m, group]` over `win`.
    fn new([n, c, m, group]: [usize; 4], win: Window) -> Case {
        Case { n, c, m, group, win }
    }

    /// W's shape: `[M, C/group, k...]` for Conv, `[C, M/group, k...]` for ConvTranspose.
    fn w_shape(&self, transpose: bool) -> Vec<usize> {
        let lead = if transpose { [self.c, self.m / self.group] } else { [self.m, self.c / self.group] };
        lead.iter().chain(&self.win.kernel).copied().collect()
    }

    fn attrs(&self, with_kernel: bool) -> Vec<(String, vinort_ir::Attr)> {
        let mut a = vec![int("group", self.group as i64)];
        a.extend(self.win.attrs());
        if with_kernel {
            a.push(ints("kernel_shape", &self.win.kernel.iter().map(|v| *v as i64).collect::<Vec<_>>()));
        }
        a
    }
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..4, 0usize..3, 1usize..4, 1usize..4, 1usize..4, any::<bool>(), 0usize..8, any::<u64>()).prop_map(
        |(r, n, group, cg, mg, depthwise, pad_kind, seed)| {
            let mut rng = rng(seed);
            let (group, cg, mg) = if depthwise { (group + 1, 1, 1) } else { (group, cg, mg) };
            let top = [0, 12, 7, 5][r];
            let mut g = |lo: usize, hi: usize| rng.random_range(lo..hi);
            let input: Vec<usize> = (0..r).map(|_| g(1, top)).collect();
            let kernel: Vec<usize> = (0..r).map(|_| g(1, 4)).collect();
            let strides: Vec<usize> = (0..r).map(|_| g(1, 4)).collect();
            let dilations: Vec<usize> = (0..r).map(|_| g(1, 3)).collect();
            let pads: Vec<usize> = (0..2 * r).map(|_| g(0, 3)).collect();
            let auto_pad = auto_pad_name(pad_kind.saturating_sub(4));
            Case {
                n,
                c: group * cg,
                m: group * mg,
                group,
                win: Window { input, kernel, strides, dilations, pads, auto_pad },
            }
        },
    )
}

/// Conv from its definition, or None when the kernel does not fit the padded input.
fn conv_ref(cs: &Case, x: &[f64], w: &[f64], b: Option<&[f64]>) -> Option<(Vec<usize>, Vec<f64>)> {
    let (out, begin, _) = cs.win.axes(false)?;
    let r = cs.win.input.len();
    let (cg, mg) = (cs.c / cs.group, cs.m / cs.group);
    let mut shape = vec![cs.n, cs.m];
    shape.extend(&out);
    let x_shape = cs.win.x_shape(cs.n, cs.c);
    let w_shape = cs.w_shape(false);
    let mut y = vec![];
    for idx in indices(&shape) {
        let (ni, mi, o) = (idx[0], idx[1], &idx[2..]);
        let g = mi / mg;
        let mut s = b.map_or(0.0, |b| b[mi]);
        for ci in 0..cg {
            for kk in indices(&cs.win.kernel) {
                let pos: Vec<i64> = (0..r)
                    .map(|a| (o[a] * cs.win.strides[a] + kk[a] * cs.win.dilations[a]) as i64 - begin[a])
                    .collect();
                if pos.iter().zip(&cs.win.input).all(|(p, d)| *p >= 0 && *p < *d as i64) {
                    let mut xi = vec![ni, g * cg + ci];
                    xi.extend(pos.iter().map(|p| *p as usize));
                    let mut wi = vec![mi, ci];
                    wi.extend(&kk);
                    s += x[flat(&x_shape, &xi)] * w[flat(&w_shape, &wi)];
                }
            }
        }
        y.push(s);
    }
    Some((shape, y))
}

proptest! {
    #![proptest_config(config(160))]

    #[test]
    fn conv_matches_definition(
        cs in case(), bias in any::<bool>(), const_w in any::<bool>(), with_kernel in any::<bool>(),
        channels_last in any::<bool>(),
        dtype in prop::sample::select(vec![DType::F32, DType::F32, DType::F64, DType::F16]),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let r = cs.win.input.len();
        let x_shape = cs.win.x_shape(cs.n, cs.c);
        let w_shape = cs.w_shape(false);
        // Optionally produce X channels-last and transpose it to NC..., as a layout change
        // upstream would.
        let x = if channels_last {
            let mut nhwc = vec![cs.n];
            nhwc.extend(&cs.win.input);
            nhwc.push(cs.c);
            let data = rand_vec(&mut rng, x_shape.iter().product());
            let mut perm = vec![0, r + 1];
            perm.extend(1..=r);
            let (s, d) = permute(&nhwc, &data, &perm);
            prop_assert_eq!(&s, &x_shape);
            d
        } else {
            rand_vec(&mut rng, x_shape.iter().product())
        };
        let w = rand_vec(&mut rng, w_shape.iter().product());
        let b = bias.then(|| rand_vec(&mut rng, cs.m));
        let inputs = [
            Some(tensor(dtype, &x_shape, &x)),
            Some(tensor(dtype, &w_shape, &w)),
            b.as_ref().map(|b| tensor(dtype, &[cs.m], b)),
        ];
        let nd = node("Conv", 22, 3, 1, cs.attrs(with_kernel));
        let got = run_node(&nd, &inputs, if const_w { &[1, 2] } else { &[] });
        let (x, w) = (inputs[0].as_ref().unwrap().to_f64_vec().unwrap(), inputs[1].as_ref().unwrap().to_f64_vec().unwrap());
        let bf = inputs[2].as_ref().map(|t| t.to_f64_vec().unwrap());
        match conv_ref(&cs, &x, &w, bf.as_deref()) {
            Some((shape, want)) => {
                let got = got.unwrap();
                prop_assert_eq!(got[0].dtype(), dtype);
                assert_close(&got[0], &shape, &want, if dtype == DType::F16 { 1e-2 } else { 1e-4 });
            }
            None => prop_assert!(got.is_err()),
        }
    }
}

/// Random X, W (laid out for ConvTranspose when `transpose`) and B for `cs` from `seed`: the
/// values, and f32 tensors holding them.
fn random_xwb(cs: &Case, seed: u64, transpose: bool) -> ([Vec<f64>; 3], [Option<Tensor>; 3]) {
    let mut rng = rng(seed);
    let shapes = [cs.win.x_shape(cs.n, cs.c), cs.w_shape(transpose), vec![cs.m]];
    let values = shapes.clone().map(|s| rand_vec(&mut rng, s.iter().product()));
    let tensors = [0, 1, 2].map(|i| Some(t32(&shapes[i], &values[i])));
    (values, tensors)
}

fn run_conv_case(cs: &Case, seed: u64) {
    let ([x, w, b], inputs) = random_xwb(cs, seed, false);
    let nd = node("Conv", 11, 3, 1, cs.attrs(true));
    let got = run_node(&nd, &inputs, &[1]).unwrap();
    let (shape, want) = conv_ref(cs, &x, &w, Some(&b)).unwrap();
    assert_close(&got[0], &shape, &want, 1e-4);
}

#[test]
fn conv_large_cases_hit_threaded_and_fast_paths() {
    let base = Case::new([1, 48, 40, 1], Window::explicit(&[23, 29], &[3, 3], &[1, 1], &[1, 1], &[1, 1, 1, 1]));
    // One image, one group: parallelism inside gemm.
    run_conv_case(&base, 1);
    // 1x1 stride 1 unpadded: straight to gemm.
    run_conv_case(
        &Case { win: Window { kernel: vec![1, 1], pads: vec![0; 4], ..base.win.clone() }, ..base.clone() },
        2,
    );
    // Depthwise over many channels, batch > 1: rayon over (image, group).
    run_conv_case(&Case { n: 2, c: 33, m: 33, group: 33, win: Window { strides: vec![2, 1], ..base.win.clone() } }, 3);
    // Grouped, batched, 3-D.
    run_conv_case(
        &Case::new(
            [3, 6, 4, 2],
            Window::explicit(&[5, 9, 11], &[2, 3, 3], &[1, 2, 1], &[2, 1, 1], &[0, 1, 1, 1, 0, 2]),
        ),
        4,
    );
}

#[test]
fn conv_same_padding_placement_by_hand() {
    // in 4, k 2, s 1: one pad element in total; SAME_LOWER puts it first, SAME_UPPER last.
    let x = t32(&[1, 1, 4], &[1., 2., 3., 4.]);
    let w = t32(&[1, 1, 2], &[1., 1.]);
    let lower = node("Conv", 11, 2, 1, vec![string("auto_pad", "SAME_LOWER")]);
    assert_close(&run1(&lower, &[Some(x.clone()), Some(w.clone())]).unwrap(), &[1, 1, 4], &[1., 3., 5., 7.], 0.0);
    let upper = node("Conv", 11, 2, 1, vec![string("auto_pad", "SAME_UPPER")]);
    assert_close(&run1(&upper, &[Some(x.clone()), Some(w.clone())]).unwrap(), &[1, 1, 4], &[3., 5., 7., 4.], 0.0);
    // Stride 2, VALID: windows at 0 and 2.
    let valid = node("Conv", 11, 2, 1, vec![string("auto_pad", "VALID"), ints("strides", &[2])]);
    assert_close(&run1(&valid, &[Some(x), Some(w)]).unwrap(), &[1, 1, 2], &[3., 7.], 0.0);
}

#[test]
fn conv_rejects_bad_shapes() {
    let z = |s: &[usize]| Some(t32(s, &vec![0.0; s.iter().product()]));
    let plain = node("Conv", 11, 3, 1, vec![]);
    // Channels disagree with W.
    assert!(run1(&plain, &[z(&[1, 3, 5, 5]), z(&[2, 2, 3, 3]), None]).is_err());
    // Group does not divide C.
    let g2 = node("Conv", 11, 3, 1, vec![int("group", 2)]);
    assert!(run1(&g2, &[z(&[1, 3, 5, 5]), z(&[2, 1, 3, 3]), None]).is_err());
    assert!(run1(&g2, &[z(&[1, 4, 5, 5]), z(&[3, 2, 3, 3]), None]).is_err());
    // Kernel bigger than the padded input.
    assert!(run1(&plain, &[z(&[1, 1, 2, 2]), z(&[1, 1, 3, 3]), None]).is_err());
    // Rank mismatch, bad bias, attributes of the wrong length, kernel_shape disagreeing.
    assert!(run1(&plain, &[z(&[1, 1, 5]), z(&[1, 1, 3, 3]), None]).is_err());
    assert!(run1(&plain, &[z(&[1, 1, 5, 5]), z(&[2, 1, 3, 3]), z(&[3])]).is_err());
    let bad_strides = node("Conv", 11, 3, 1, vec![ints("strides", &[1, 1, 1])]);
    assert!(run1(&bad_strides, &[z(&[1, 1, 5, 5]), z(&[1, 1, 3, 3]), None]).is_err());
    let bad_k = node("Conv", 11, 3, 1, vec![ints("kernel_shape", &[2, 2])]);
    assert!(run1(&bad_k, &[z(&[1, 1, 5, 5]), z(&[1, 1, 3, 3]), None]).is_err());
    let zero_s = node("Conv", 11, 3, 1, vec![ints("strides", &[0, 1])]);
    assert!(run1(&zero_s, &[z(&[1, 1, 5, 5]), z(&[1, 1, 3, 3]), None]).is_err());
    assert!(run1(&plain, &[z(&[1, 5]), z(&[1, 5]), None]).is_err());
    let i = Some(tensor(DType::I32, &[1, 1, 3], &[0.; 3]));
    assert!(run1(&node("Conv", 11, 2, 1, vec![]), &[i.clone(), i]).is_err());
}

/// ConvTranspose from its definition: each input element spreads through the kernel to
/// output position `i * s + k * d - pad_begin`.
#[allow(clippy::too_many_arguments)]
fn conv_transpose_ref(
    cs: &Case,
    op: &[usize],
    output_shape: Option<&[usize]>,
    x: &[f64],
    w: &[f64],
    b: Option<&[f64]>,
) -> (Vec<usize>, Vec<f64>) {
    let r = cs.win.input.len();
    let mut out = vec![];
    let mut begin = vec![];
    for i in 0..r {
        let (inp, s, k, d) =
            (cs.win.input[i] as i64, cs.win.strides[i] as i64, cs.win.kernel[i] as i64, cs.win.dilations[i] as i64);
        let natural = s * (inp - 1) + op[i] as i64 + (k - 1) * d + 1;
        let target = match (output_shape, cs.win.auto_pad) {
            (Some(t), _) => Some(t[i] as i64),
            (None, "SAME_UPPER" | "SAME_LOWER") => Some(inp * s),
            _ => None,
        };
        let (o, pb) = match target {
            Some(t) => {
                let total = natural - t;
                // The spec's reference floors (Python `//`), which matters when t > natural.
                (t, if cs.win.auto_pad == "SAME_UPPER" { total.div_euclid(2) } else { total - total.div_euclid(2) })
            }
            None if cs.win.auto_pad == "VALID" => (natural, 0),
            None => (natural - (cs.win.pads[i] + cs.win.pads[i + r]) as i64, cs.win.pads[i] as i64),
        };
        out.push(o as usize);
        begin.push(pb);
    }
    let (cg, mg) = (cs.c / cs.group, cs.m / cs.group);
    let mut shape = vec![cs.n, cs.m];
    shape.extend(&out);
    let x_shape = cs.win.x_shape(cs.n, cs.c);
    let w_shape = cs.w_shape(true);
    let mut y = vec![0.0; shape.iter().product()];
    for yi in indices(&shape) {
        y[flat(&shape, &yi)] = b.map_or(0.0, |b| b[yi[1]]);
    }
    for xi in indices(&x_shape) {
        let (ni, ci) = (xi[0], xi[1]);
        let g = ci / cg;
        for ml in 0..mg {
            for kk in indices(&cs.win.kernel) {
                let o: Vec<i64> = (0..r)
                    .map(|a| (xi[2 + a] * cs.win.strides[a] + kk[a] * cs.win.dilations[a]) as i64 - begin[a])
                    .collect();
                if o.iter().zip(&out).all(|(p, d)| *p >= 0 && *p < *d as i64) {
                    let mut yi = vec![ni, g * mg + ml];
                    yi.extend(o.iter().map(|p| *p as usize));
                    let mut wi = vec![ci, ml];
                    wi.extend(&kk);
                    y[flat(&shape, &yi)] += x[flat(&x_shape, &xi)] * w[flat(&w_shape, &wi)];
                }
            }
        }
    }
    (shape, y)
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn conv_transpose_matches_definition(
        cs in case(), bias in any::<bool>(), const_w in any::<bool>(), op_seed in any::<u64>(),
        use_output_shape in any::<bool>(), dtype in prop::sample::select(vec![DType::F32, DType::F64]),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let r = cs.win.input.len();
        let mut ops = super::rng(op_seed);
        let op: Vec<usize> = cs.win.strides.iter().map(|s| ops.random_range(0..*s)).collect();
        // An explicit output_shape a little smaller or larger than the natural size (pads then
        // derived; larger ones pad at the end).
        let natural: Vec<usize> = (0..r)
            .map(|i| cs.win.strides[i] * (cs.win.input[i] - 1) + op[i] + (cs.win.kernel[i] - 1) * cs.win.dilations[i] + 1)
            .collect();
        let output_shape: Option<Vec<usize>> =
            use_output_shape.then(|| natural.iter().map(|n| n + 2 - ops.random_range(0..(*n).min(3) + 2)).collect());
        let explicit_out: Vec<i64> = (0..r).map(|i| natural[i] as i64 - (cs.win.pads[i] + cs.win.pads[i + r]) as i64).collect();
        let x_shape = cs.win.x_shape(cs.n, cs.c);
        let w_shape = cs.w_shape(true);
        let x = rand_vec(&mut rng, x_shape.iter().product());
        let w = rand_vec(&mut rng, w_shape.iter().product());
        let b = bias.then(|| rand_vec(&mut rng, cs.m));
        let mut attrs = cs.attrs(false);
        attrs.push(ints("output_padding", &op.iter().map(|v| *v as i64).collect::<Vec<_>>()));
        if let Some(os) = &output_shape {
            attrs.push(ints("output_shape", &os.iter().map(|v| *v as i64).collect::<Vec<_>>()));
        }
        let nd = node("ConvTranspose", 11, 3, 1, attrs);
        let inputs = [Some(tensor(dtype, &x_shape, &x)), Some(tensor(dtype, &w_shape, &w)), b.as_ref().map(|b| tensor(dtype, &[cs.m], b))];
        let got = run_node(&nd, &inputs, if const_w { &[1] } else { &[] });
        if output_shape.is_none() && cs.win.auto_pad == "NOTSET" && explicit_out.iter().any(|o| *o < 0) {
            prop_assert!(got.is_err());
        } else {
            let (shape, want) = conv_transpose_ref(&cs, &op, output_shape.as_deref(), &x, &w, b.as_deref());
            assert_close(&got.unwrap()[0], &shape, &want, 1e-4);
        }
    }
}

#[test]
fn conv_transpose_spec_example() {
    // The example from the ONNX ConvTranspose page: 3x3 input, two 3x3 all-ones filters.
    let x = t32(&[1, 1, 3, 3], &[0., 1., 2., 3., 4., 5., 6., 7., 8.]);
    let w = t32(&[1, 2, 3, 3], &[1.0; 18]);
    let plane = [
        0., 1., 3., 3., 2., 3., 8., 15., 12., 7., 9., 21., 36., 27., 15., 9., 20., 33., 24., 13., 6., 13., 21., 15., 8.,
    ];
    let want: Vec<f64> = plane.iter().chain(&plane).copied().collect();
    let nd = node("ConvTranspose", 11, 2, 1, vec![]);
    assert_close(&run1(&nd, &[Some(x), Some(w)]).unwrap(), &[1, 2, 5, 5], &want, 0.0);
}

#[test]
fn conv_transpose_large_and_errors() {
    let cs = Case::new([2, 24, 18, 3], Window::explicit(&[13, 17], &[3, 4], &[2, 3], &[1, 2], &[1, 0, 2, 1]));
    let ([x, w, b], inputs) = random_xwb(&cs, 9, true);
    let nd = node("ConvTranspose", 11, 3, 1, cs.attrs(true));
    let got = run1(&nd, &inputs).unwrap();
    let (shape, want) = conv_transpose_ref(&cs, &[0, 0], None, &x, &w, Some(&b));
    assert_close(&got, &shape, &want, 1e-4);

    let z = |s: &[usize]| Some(t32(s, &vec![0.0; s.iter().product()]));
    let plain = node("ConvTranspose", 11, 3, 1, vec![]);
    assert!(run1(&plain, &[z(&[1, 3, 4, 4]), z(&[2, 1, 3, 3]), None]).is_err());
    let g2 = node("ConvTranspose", 11, 3, 1, vec![int("group", 2)]);
    assert!(run1(&g2, &[z(&[1, 3, 4, 4]), z(&[3, 1, 3, 3]), None]).is_err());
    assert!(run1(&plain, &[z(&[1, 1, 4, 4]), z(&[1, 2, 3, 3]), z(&[3])]).is_err());
    // Pads larger than the natural output.
    let big_pads = node("ConvTranspose", 11, 3, 1, vec![ints("pads", &[5, 5, 5, 5])]);
    assert!(run1(&big_pads, &[z(&[1, 1, 2, 2]), z(&[1, 1, 2, 2]), None]).is_err());
}
