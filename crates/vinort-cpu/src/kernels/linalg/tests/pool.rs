//! The pools against the spec definitions (https://onnx.ai/onnx/operators/onnx__MaxPool.html and
//! its AveragePool, LpPool and Global* siblings), including hand-derived ceil_mode and SAME_* cases.

use proptest::prelude::*;
use rand::Rng as _;
use vinort_ir::DType;

use super::*;

#[derive(Clone, Debug)]
struct Case {
    n: usize,
    c: usize,
    win: Window,
    ceil: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..4, 0usize..3, 0usize..4, 0usize..8, any::<bool>(), any::<u64>()).prop_map(
        |(r, n, c, pad_kind, ceil, seed)| {
            let mut rng = rng(seed);
            let top = [0, 14, 9, 6][r];
            let mut g = |lo: usize, hi: usize| rng.random_range(lo..hi);
            let kernel: Vec<usize> = (0..r).map(|_| g(1, 4)).collect();
            let pads: Vec<usize> = (0..2 * r).map(|i| g(0, kernel[i % r])).collect();
            let win = Window {
                input: (0..r).map(|_| g(1, top)).collect(),
                kernel,
                strides: (0..r).map(|_| g(1, 4)).collect(),
                dilations: (0..r).map(|_| g(1, 3)).collect(),
                pads,
                auto_pad: auto_pad_name(pad_kind.saturating_sub(4)),
            };
            Case { n, c, win, ceil }
        },
    )
}

impl Case {
    fn attrs(&self) -> Vec<(String, vinort_ir::Attr)> {
        let mut a = vec![ints("kernel_shape", &self.win.kernel.iter().map(|v| *v as i64).collect::<Vec<_>>())];
        a.extend(self.win.attrs());
        a.push(int("ceil_mode", self.ceil as i64));
        a
    }

    fn x_shape(&self) -> Vec<usize> {
        self.win.x_shape(self.n, self.c)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Max { column_major: bool },
    Avg { include_pad: bool },
    Lp(f64),
}

/// A pool from the spec's definition; for Max also the flat argmax index (first maximum in
/// window order, spatial part in row- or column-major order).
fn pool_ref(cs: &Case, op: Op, x: &[f64]) -> Option<(Vec<usize>, Vec<f64>, Vec<i64>)> {
    let (out, pb, pe) = cs.win.axes(cs.ceil)?;
    let r = cs.win.input.len();
    let mut shape = vec![cs.n, cs.c];
    shape.extend(&out);
    let xs = cs.x_shape();
    let plane: usize = cs.win.input.iter().product();
    let (mut y, mut ind) = (vec![], vec![]);
    for idx in indices(&shape) {
        let (ni, ci, o) = (idx[0], idx[1], &idx[2..]);
        let (mut vals, mut at, mut padded) = (vec![], vec![], 0usize);
        for kk in indices(&cs.win.kernel) {
            let pos: Vec<i64> =
                (0..r).map(|a| (o[a] * cs.win.strides[a] + kk[a] * cs.win.dilations[a]) as i64 - pb[a]).collect();
            if pos.iter().zip(&pe).zip(&cs.win.input).all(|((p, e), d)| *p < *d as i64 + e) {
                padded += 1;
            }
            if pos.iter().zip(&cs.win.input).all(|(p, d)| *p >= 0 && *p < *d as i64) {
                let p: Vec<usize> = pos.iter().map(|p| *p as usize).collect();
                let mut xi = vec![ni, ci];
                xi.extend(&p);
                vals.push(x[flat(&xs, &xi)]);
                let spatial = match op {
                    Op::Max { column_major: true } => {
                        let rev_shape: Vec<usize> = cs.win.input.iter().rev().copied().collect();
                        let rev: Vec<usize> = p.iter().rev().copied().collect();
                        flat(&rev_shape, &rev)
                    }
                    _ => flat(&cs.win.input, &p),
                };
                at.push(((ni * cs.c + ci) * plane + spatial) as i64);
            }
        }
        match op {
            Op::Max { .. } => {
                let mut best = (f64::NEG_INFINITY, -1);
                for (i, v) in vals.iter().enumerate() {
                    if i == 0 || *v > best.0 {
                        best = (*v, at[i]);
                    }
                }
                y.push(best.0);
                ind.push(best.1);
            }
            Op::Avg { include_pad } => {
                let n = if include_pad { padded } else { vals.len() };
                y.push(vals.iter().sum::<f64>() / n as f64);
            }
            Op::Lp(p) => y.push(vals.iter().map(|v| v.abs().powf(p)).sum::<f64>().powf(1.0 / p)),
        }
    }
    Some((shape, y, ind))
}

proptest! {
    #![proptest_config(config(160))]

    #[test]
    fn pools_match_definition(
        cs in case(), which in 0usize..5,
        dtype in prop::sample::select(vec![DType::F32, DType::F32, DType::F64, DType::F16]),
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let (op, name, mut attrs) = match which {
            0 => (Op::Max { column_major: false }, "MaxPool", vec![]),
            1 => (Op::Max { column_major: true }, "MaxPool", vec![int("storage_order", 1)]),
            2 => (Op::Avg { include_pad: false }, "AveragePool", vec![]),
            3 => (Op::Avg { include_pad: true }, "AveragePool", vec![int("count_include_pad", 1)]),
            _ => (Op::Lp(3.0), "LpPool", vec![int("p", 3)]),
        };
        attrs.extend(cs.attrs());
        let n_out = if name == "MaxPool" { 2 } else { 1 };
        let nd = node(name, 22, 1, n_out, attrs);
        let xt = tensor(dtype, &cs.x_shape(), &rand_vec(&mut rng, cs.x_shape().iter().product()));
        let x = xt.to_f64_vec().unwrap();
        let got = run_node(&nd, &[Some(xt)], &[]);
        match pool_ref(&cs, op, &x) {
            Some((shape, want, ind)) => {
                let got = got.unwrap();
                prop_assert_eq!(got[0].dtype(), dtype);
                let tol = if dtype == DType::F16 { 1e-2 } else { 1e-4 };
                assert_close(&got[0], &shape, &want, tol);
                if let Op::Max { .. } = op {
                    prop_assert_eq!(got[1].shape(), &shape[..]);
                    // Ties at equal values may pick a different but equal element in f16;
                    // compare indices only where values are exact.
                    if dtype != DType::F16 {
                        prop_assert_eq!(got[1].to_vec::<i64>().unwrap(), ind);
                    }
                }
            }
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn maxpool_int8_and_uint8(cs in case(), unsigned in any::<bool>(), seed in any::<u64>()) {
        let mut rng = rng(seed);
        let dtype = if unsigned { DType::U8 } else { DType::I8 };
        let x: Vec<f64> = (0..cs.x_shape().iter().product::<usize>())
            .map(|_| if unsigned { rng.random_range(0..256) as f64 } else { rng.random_range(-128..128) as f64 })
            .collect();
        let nd = node("MaxPool", 12, 1, 1, cs.attrs());
        let got = run1(&nd, &[Some(tensor(dtype, &cs.x_shape(), &x))]);
        match pool_ref(&cs, Op::Max { column_major: false }, &x) {
            Some((shape, want, _)) => {
                // An all-padding window (possible with dilation) yields the type's lowest value.
                let lowest = if unsigned { 0.0 } else { -128.0 };
                let want: Vec<f64> = want.iter().map(|v| if v.is_finite() { *v } else { lowest }).collect();
                let got = got.unwrap();
                prop_assert_eq!(got.dtype(), dtype);
                assert_close(&got, &shape, &want, 0.0);
            }
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn global_pools_match_definition(
        n in 0usize..3, c in 0usize..4, spatial in prop::collection::vec(1usize..7, 1..4), which in 0usize..3,
        seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let mut shape = vec![n, c];
        shape.extend(&spatial);
        let x = rand_vec(&mut rng, shape.iter().product());
        let (name, attrs) = [("GlobalMaxPool", vec![]), ("GlobalAveragePool", vec![]), ("GlobalLpPool", vec![int("p", 2)])][which].clone();
        let got = run1(&node(name, 22, 1, 1, attrs), &[Some(t32(&shape, &x))]).unwrap();
        let plane: usize = spatial.iter().product();
        let want: Vec<f64> = x
            .chunks(plane)
            .map(|p| match which {
                0 => p.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                1 => p.iter().sum::<f64>() / plane as f64,
                _ => p.iter().map(|v| v * v).sum::<f64>().sqrt(),
            })
            .collect();
        let mut out_shape = vec![n, c];
        out_shape.extend(std::iter::repeat_n(1, spatial.len()));
        assert_close(&got, &out_shape, &want, 1e-4);
    }
}

#[test]
fn ceil_mode_by_hand() {
    let x = t32(&[1, 1, 5], &[1., 2., 3., 4., 5.]);
    // ceil((5 + 2 - 2) / 2 + 1) = 4, but the 4th window would start at 5 = in + pad_begin,
    // inside the right padding, so it is dropped: 3 windows starting at -1, 1, 3.
    let nd = node(
        "MaxPool",
        12,
        1,
        1,
        vec![ints("kernel_shape", &[2]), ints("strides", &[2]), ints("pads", &[1, 1]), int("ceil_mode", 1)],
    );
    assert_close(&run1(&nd, &[Some(x.clone())]).unwrap(), &[1, 1, 3], &[1., 3., 5.], 0.0);
    // Without padding: ceil((5 - 2) / 2 + 1) = 3; the last window holds only x[4].
    let nd = node("MaxPool", 12, 1, 1, vec![ints("kernel_shape", &[2]), ints("strides", &[2]), int("ceil_mode", 1)]);
    assert_close(&run1(&nd, &[Some(x.clone())]).unwrap(), &[1, 1, 3], &[2., 4., 5.], 0.0);
    let nd = node("MaxPool", 12, 1, 1, vec![ints("kernel_shape", &[2]), ints("strides", &[2])]);
    assert_close(&run1(&nd, &[Some(x)]).unwrap(), &[1, 1, 2], &[2., 4.], 0.0);
    // AveragePool, ceil: the partial last window [4, 6) of 6 inputs averages 2 values, with
    // or without count_include_pad (taps beyond the end padding never count).
    let x = t32(&[1, 1, 6], &[1., 2., 3., 4., 5., 6.]);
    for include in [0, 1] {
        let nd = node(
            "AveragePool",
            19,
            1,
            1,
            vec![
                ints("kernel_shape", &[3]),
                ints("strides", &[2]),
                int("ceil_mode", 1),
                int("count_include_pad", include),
            ],
        );
        assert_close(&run1(&nd, &[Some(x.clone())]).unwrap(), &[1, 1, 3], &[2., 4., 5.5], 0.0);
    }
    // count_include_pad with explicit pads: [pad, 1, 2] / 3 = 1 vs [1, 2] / 2 = 1.5.
    let x = t32(&[1, 1, 3], &[1., 2., 3.]);
    for (include, first) in [(0, 1.5), (1, 1.0)] {
        let nd = node(
            "AveragePool",
            11,
            1,
            1,
            vec![ints("kernel_shape", &[3]), ints("pads", &[1, 1]), int("count_include_pad", include)],
        );
        let want = [first, 2.0, if include == 1 { 5.0 / 3.0 } else { 2.5 }];
        assert_close(&run1(&nd, &[Some(x.clone())]).unwrap(), &[1, 1, 3], &want, 1e-6);
    }
}

#[test]
fn same_lower_pool_and_indices_by_hand() {
    // in 4, k 2, s 1, SAME_LOWER: the single pad goes first, so window 0 sees only x[0].
    let x = t32(&[1, 1, 4], &[4., 1., 3., 2.]);
    let nd = node("MaxPool", 12, 1, 2, vec![ints("kernel_shape", &[2]), string("auto_pad", "SAME_LOWER")]);
    let got = run_node(&nd, &[Some(x.clone())], &[]).unwrap();
    assert_close(&got[0], &[1, 1, 4], &[4., 4., 3., 3.], 0.0);
    assert_eq!(got[1].to_vec::<i64>().unwrap(), [0, 0, 2, 2]);
    let nd = node("MaxPool", 12, 1, 1, vec![ints("kernel_shape", &[2]), string("auto_pad", "SAME_UPPER")]);
    assert_close(&run1(&nd, &[Some(x)]).unwrap(), &[1, 1, 4], &[4., 3., 3., 2.], 0.0);
    // 2x3 plane, 2x2 window: maxima at (1,1) and (1,2). Row-major flat indices 4 and 5;
    // column-major (h + w * H) 3 and 5; the second channel adds its plane offset 6.
    let x = t32(&[1, 2, 2, 3], &[1., 2., 3., 4., 5., 6., 1., 2., 3., 4., 5., 6.]);
    for (order, want) in [(0, [4, 5, 10, 11]), (1, [3, 5, 9, 11])] {
        let nd = node("MaxPool", 12, 1, 2, vec![ints("kernel_shape", &[2, 2]), int("storage_order", order)]);
        let got = run_node(&nd, &[Some(x.clone())], &[]).unwrap();
        assert_close(&got[0], &[1, 2, 1, 2], &[5., 6., 5., 6.], 0.0);
        assert_eq!(got[1].to_vec::<i64>().unwrap(), want);
    }
}

#[test]
fn pools_large_and_errors() {
    let cs =
        Case { n: 2, c: 37, win: Window::explicit(&[31, 45], &[3, 3], &[2, 2], &[1, 2], &[1, 2, 1, 0]), ceil: true };
    let x = rand_vec(&mut rng(5), cs.x_shape().iter().product());
    let nd = node("AveragePool", 19, 1, 1, cs.attrs());
    let (shape, want, _) = pool_ref(&cs, Op::Avg { include_pad: false }, &x).unwrap();
    assert_close(&run1(&nd, &[Some(t32(&cs.x_shape(), &x))]).unwrap(), &shape, &want, 1e-5);

    let z = |s: &[usize]| Some(t32(s, &vec![0.0; s.iter().product()]));
    let mp = |a: Vec<(String, vinort_ir::Attr)>| node("MaxPool", 12, 1, 1, a);
    // Kernel bigger than the padded input.
    assert!(run1(&mp(vec![ints("kernel_shape", &[4])]), &[z(&[1, 1, 3])]).is_err());
    // kernel_shape missing, or of the wrong rank; bad strides; bad pads length.
    assert!(run1(&mp(vec![]), &[z(&[1, 1, 3])]).is_err());
    assert!(run1(&mp(vec![ints("kernel_shape", &[2, 2])]), &[z(&[1, 1, 3])]).is_err());
    assert!(run1(&mp(vec![ints("kernel_shape", &[2]), ints("strides", &[0])]), &[z(&[1, 1, 3])]).is_err());
    assert!(run1(&mp(vec![ints("kernel_shape", &[2]), ints("pads", &[1])]), &[z(&[1, 1, 3])]).is_err());
    assert!(run1(&mp(vec![ints("kernel_shape", &[2])]), &[z(&[1, 3])]).is_err());
    // Integer MaxPool only from opset 12; AveragePool never.
    let i8x = Some(tensor(DType::I8, &[1, 1, 3], &[1., 2., 3.]));
    assert!(run1(&node("MaxPool", 11, 1, 1, vec![ints("kernel_shape", &[2])]), std::slice::from_ref(&i8x)).is_err());
    assert!(run1(&node("AveragePool", 19, 1, 1, vec![ints("kernel_shape", &[2])]), &[i8x]).is_err());
    assert!(run1(&node("LpPool", 18, 1, 1, vec![ints("kernel_shape", &[2]), int("p", 0)]), &[z(&[1, 1, 3])]).is_err());
}

#[test]
fn empty_spatial_input_with_padding() {
    // A zero-length axis padded enough for one window: MaxPool sees no element, AveragePool
    // with count_include_pad divides zero by the padded count.
    let x = t32(&[1, 2, 0], &[]);
    let attrs = || vec![ints("kernel_shape", &[2]), ints("pads", &[1, 1])];
    let got = run1(&node("MaxPool", 12, 1, 1, attrs()), &[Some(x.clone())]).unwrap();
    assert_close(&got, &[1, 2, 1], &[f64::NEG_INFINITY; 2], 0.0);
    let mut a = attrs();
    a.push(int("count_include_pad", 1));
    let got = run1(&node("AveragePool", 11, 1, 1, a), &[Some(x.clone())]).unwrap();
    assert_close(&got, &[1, 2, 1], &[0.0; 2], 0.0);
    // A 3-D pool whose one depth window lies wholly in the depth padding sees no element
    // either, though its rows and columns would (the 2-D shortcut must not take it).
    let x3 = t32(&[1, 1, 1, 2, 2], &[1., 2., 3., 4.]);
    let a3 = vec![ints("kernel_shape", &[1, 2, 2]), ints("pads", &[1, 0, 0, 0, 0, 0]), ints("strides", &[2, 1, 1])];
    let got = run_node(&node("MaxPool", 12, 1, 2, a3), &[Some(x3)], &[]).unwrap();
    assert_close(&got[0], &[1, 1, 1, 1, 1], &[f64::NEG_INFINITY], 0.0);
    assert_eq!(got[1].to_vec::<i64>().unwrap(), [-1]);
    let got = run1(&node("GlobalMaxPool", 1, 1, 1, vec![]), &[Some(t32(&[1, 2, 3, 0], &[]))]).unwrap();
    assert_close(&got, &[1, 2, 1, 1], &[f64::NEG_INFINITY; 2], 0.0);
    let got = run1(
        &node("MaxPool", 12, 1, 1, vec![ints("kernel_shape", &[2]), string("auto_pad", "SAME_UPPER")]),
        &[Some(x)],
    )
    .unwrap();
    assert_eq!(got.shape(), [1, 2, 0]);
}

proptest! {
    #![proptest_config(config(64))]

    /// The 2x2 window at stride 2 (SegNet's and U-Net's pools, with their Indices) takes a
    /// straight-line path: against the definition with ties (small integers) so the first
    /// maximum must win, odd extents (and ceil mode, whose last partial window takes the
    /// general walk), both storage orders, f32 and f64.
    #[test]
    fn maxpool_2x2_stride_2_matches_definition(
        h in 1usize..12, w in 1usize..12, n in 1usize..3, c in 1usize..4, ceil in any::<bool>(),
        column_major in any::<bool>(), f64_ty in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = rng(seed);
        let win = Window {
            input: vec![h, w],
            kernel: vec![2, 2],
            strides: vec![2, 2],
            dilations: vec![1, 1],
            pads: vec![0; 4],
            auto_pad: auto_pad_name(0),
        };
        let cs = Case { n, c, win, ceil };
        let dtype = if f64_ty { DType::F64 } else { DType::F32 };
        let x: Vec<f64> = (0..cs.x_shape().iter().product::<usize>()).map(|_| rng.random_range(-3i32..3) as f64).collect();
        let mut attrs = cs.attrs();
        attrs.push(int("storage_order", i64::from(column_major)));
        let got = run_node(&node("MaxPool", 12, 1, 2, attrs), &[Some(tensor(dtype, &cs.x_shape(), &x))], &[]);
        match pool_ref(&cs, Op::Max { column_major }, &x) {
            Some((shape, want, ind)) => {
                let got = got.unwrap();
                assert_close(&got[0], &shape, &want, 0.0);
                prop_assert_eq!(got[1].to_vec::<i64>().unwrap(), ind);
            }
            None => prop_assert!(got.is_err()),
        }
    }
}

/// MaxUnpool: hand-worked scatters. Two planes of a 1x2 pooled output, kernel 2, stride 2,
/// so each output plane is 1x4 and the flat output has 8 positions.
#[test]
fn maxunpool_scatters_within_and_across_planes() {
    let n = node("MaxUnpool", 11, 2, 1, vec![ints("kernel_shape", &[1, 2]), ints("strides", &[1, 2])]);
    let x = t32(&[1, 2, 1, 2], &[1.0, 2.0, 3.0, 4.0]);
    let idx = |v: &[i64]| ts::tensor_of::<i64>(&[1, 2, 1, 2], v);
    // Every index in its own plane (the parallel scatter).
    let y = run1(&n, &[Some(x.clone()), Some(idx(&[1, 2, 4, 7]))]).unwrap();
    assert_close(&y, &[1, 2, 1, 4], &[0.0, 1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 4.0], 0.0);
    // Plane 0's second value lands in plane 1, and plane 1's first value lands on the same
    // position: element order decides, the later write (3.0) wins.
    let y = run1(&n, &[Some(x.clone()), Some(idx(&[0, 5, 5, 6]))]).unwrap();
    assert_close(&y, &[1, 2, 1, 4], &[1.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 0.0], 0.0);
    // Duplicates inside one plane: the later element wins there too.
    let y = run1(&n, &[Some(x.clone()), Some(idx(&[3, 3, 4, 4]))]).unwrap();
    assert_close(&y, &[1, 2, 1, 4], &[0.0, 0.0, 0.0, 2.0, 4.0, 0.0, 0.0, 0.0], 0.0);
    // Out of range (8 positions) and negative indices are errors, not writes.
    for bad in [[0, 1, 2, 8], [-1, 1, 2, 3]] {
        let e = run1(&n, &[Some(x.clone()), Some(idx(&bad))]).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
    }
    // A larger output_shape: indices address the inferred 1x4 planes, placed at the origin of
    // 2x5 planes.
    let n3 = node("MaxUnpool", 11, 3, 1, vec![ints("kernel_shape", &[1, 2]), ints("strides", &[1, 2])]);
    let shape = ts::tensor_of::<i64>(&[4], &[1, 2, 2, 5]);
    let y = run_node(&n3, &[Some(x), Some(idx(&[1, 2, 4, 7])), Some(shape)], &[]).unwrap().remove(0);
    let mut want = vec![0.0; 20];
    (want[1], want[2], want[10], want[13]) = (1.0, 2.0, 3.0, 4.0);
    assert_close(&y, &[1, 2, 2, 5], &want, 0.0);
}
