use super::*;
use proptest::prelude::*;

const ALL: [Isa; 3] = [Isa::Avx512Vnni, Isa::Avx2, Isa::Portable];

fn isas() -> Vec<Isa> {
    ALL.into_iter().filter(|i| i.is_available()).collect()
}

#[test]
fn this_machine_runs_every_path() {
    // Every test runs each path this CPU supports. On an AVX-512 VNNI
    // machine, set QGEMM_REQUIRE_ALL_PATHS to check that none is skipped.
    if std::env::var_os("QGEMM_REQUIRE_ALL_PATHS").is_some() {
        assert_eq!(isas(), ALL.to_vec());
    }
    assert!(isas().contains(&Isa::detected()));
}

/// Independent reference: the definition, with wrapping i32 arithmetic.
#[allow(clippy::too_many_arguments)]
fn naive(
    m: usize,
    n: usize,
    k: usize,
    a: &[i32],
    lda: usize,
    za: &[i32],
    b: &[i32],
    trans: bool,
    zb: &[i32],
    c: &mut [i32],
    ldc: usize,
) {
    for i in 0..m {
        let zai = za[if za.len() == 1 { 0 } else { i }];
        for j in 0..n {
            let zbj = zb[if zb.len() == 1 { 0 } else { j }];
            let mut s = 0i32;
            for p in 0..k {
                let bv = if trans { b[j * k + p] } else { b[p * n + j] };
                s = s.wrapping_add(a[i * lda + p].wrapping_sub(zai).wrapping_mul(bv.wrapping_sub(zbj)));
            }
            c[i * ldc + j] = s;
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A byte, biased towards the extremes 0x00, 0x7f, 0x80, 0xff.
    fn byte(&mut self) -> u8 {
        let x = self.next();
        match x % 8 {
            0 => [0x00, 0x7f, 0x80, 0xff][(x >> 8) as usize % 4],
            _ => (x >> 16) as u8,
        }
    }
    /// A zero point in the element type's range, or rarely any i32 (the
    /// result is exact for any i32 zero point).
    fn zp(&mut self, signed: bool) -> i32 {
        let x = self.next();
        match x % 16 {
            0 => (x >> 32) as i32,
            _ if signed => i32::from(self.byte() as i8),
            _ => i32::from(self.byte()),
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldc: usize,
    a_signed: bool,
    b_signed: bool,
    /// 0: per-tensor, 1: per-row, 2: per-row but all equal.
    za_mode: u8,
    /// 0: per-tensor, 1: per-column, 2: per-column but all equal,
    /// 3: per-tensor symmetric (0 for i8, 128 for u8), 4: per-column symmetric.
    zb_mode: u8,
    trans: bool,
    seed: u64,
}

/// Zero points by `mode` (see `Case`); `rows`: m for A, n for B.
fn zero_points(rng: &mut Rng, mode: u8, rows: usize, signed: bool) -> Vec<i32> {
    let sym = if signed { 0 } else { 128 };
    match mode {
        0 => vec![rng.zp(signed)],
        1 => (0..rows).map(|_| rng.zp(signed)).collect(),
        2 => vec![rng.zp(signed); rows],
        3 => vec![sym],
        _ => vec![sym; rows],
    }
}

fn case(max_m: usize, max_n: usize, max_k: usize) -> impl Strategy<Value = Case> {
    (
        1..=max_m,
        1..=max_n,
        prop_oneof![1..=8usize, 1..=max_k],
        prop_oneof![Just(0usize), 1..9usize],
        prop_oneof![Just(0usize), 1..9usize],
        any::<[bool; 3]>(),
        (0..3u8, 0..5u8),
        any::<u64>(),
    )
        .prop_map(|(m, n, k, pa, pc, f, (za_mode, zb_mode), seed)| Case {
            m,
            n,
            k,
            lda: k + pa,
            ldc: n + pc,
            a_signed: f[0],
            b_signed: f[1],
            za_mode,
            zb_mode,
            trans: f[2],
            seed,
        })
}

const SENTINEL: i32 = 0x5A5A_5A5A;

/// Runs `cs` on every available path, sequential and forced parallel,
/// and compares with `naive` (also checking the gaps of C stay untouched).
fn check(cs: &Case) -> Result<(), TestCaseError> {
    let Case { m, n, k, lda, ldc, .. } = *cs;
    let mut rng = Rng(cs.seed);
    let a_bytes: Vec<u8> = (0..(m - 1) * lda + k).map(|_| rng.byte()).collect();
    let b_bytes: Vec<u8> = (0..k * n).map(|_| rng.byte()).collect();
    let za = zero_points(&mut rng, cs.za_mode, m, cs.a_signed);
    let zb = zero_points(&mut rng, cs.zb_mode, n, cs.b_signed);
    let a_i8: Vec<i8> = a_bytes.iter().map(|&x| x as i8).collect();
    let b_i8: Vec<i8> = b_bytes.iter().map(|&x| x as i8).collect();
    let widen = |bytes: &[u8], signed: bool| -> Vec<i32> {
        bytes.iter().map(|&x| if signed { i32::from(x as i8) } else { i32::from(x) }).collect()
    };
    let (a, a32) = if cs.a_signed {
        (Int8::I8(&a_i8), widen(&a_bytes, true))
    } else {
        (Int8::U8(&a_bytes), widen(&a_bytes, false))
    };
    let (b, b32) = if cs.b_signed {
        (Int8::I8(&b_i8), widen(&b_bytes, true))
    } else {
        (Int8::U8(&b_bytes), widen(&b_bytes, false))
    };
    let clen = (m - 1) * ldc + n + 3;
    let mut want = vec![SENTINEL; clen];
    naive(m, n, k, &a32, lda, &za, &b32, cs.trans, &zb, &mut want, ldc);
    let packed = PackedB::new(b, k, n, cs.trans, &zb).map_err(TestCaseError::fail)?;
    prop_assert_eq!((packed.k(), packed.n()), (k, n));
    for isa in isas() {
        for par in [None, Some(0)] {
            let mut got = vec![SENTINEL; clen];
            qgemm_impl(isa, m, a, lda, &za, &packed, &mut got, ldc, par).map_err(TestCaseError::fail)?;
            prop_assert!(got == want, "{:?} par={:?} differs", isa, par);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn matches_naive(cs in case(40, 70, 300)) {
        check(&cs)?;
    }

    #[test]
    fn matches_naive_in_a_wider_pool(cs in case(40, 200, 64)) {
        // 5 threads: other row/column splits than the machine's pool.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(5).build().map_err(|e| TestCaseError::fail(e.to_string()))?;
        pool.install(|| check(&cs))?;
    }

    #[test]
    fn public_entry_matches_naive(cs in case(40, 70, 300)) {
        // Through `qgemm` (detected path, real parallel threshold).
        let mut rng = Rng(cs.seed);
        let Case { m, n, k, lda, ldc, .. } = cs;
        let a: Vec<i8> = (0..(m - 1) * lda + k).map(|_| rng.byte() as i8).collect();
        let b: Vec<u8> = (0..k * n).map(|_| rng.byte()).collect();
        let a32: Vec<i32> = a.iter().map(|&x| i32::from(x)).collect();
        let b32: Vec<i32> = b.iter().map(|&x| i32::from(x)).collect();
        let (za, zb) = ([rng.zp(true)], [rng.zp(false)]);
        let mut want = vec![SENTINEL; (m - 1) * ldc + n];
        naive(m, n, k, &a32, lda, &za, &b32, cs.trans, &zb, &mut want, ldc);
        let packed = PackedB::new(Int8::U8(&b), k, n, cs.trans, &zb).map_err(TestCaseError::fail)?;
        let mut got = vec![SENTINEL; want.len()];
        qgemm(m, Int8::I8(&a), lda, &za, &packed, &mut got, ldc, cs.parallel_hint()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(got, want);
    }

    #[test]
    fn bad_sizes_are_errors(m in 0..20usize, n in 0..20usize, k in 0..20usize,
                            lda in 0..24usize, ldc in 0..24usize,
                            alen in 0..500usize, blen in 0..500usize, clen in 0..500usize,
                            zalen in 0..22usize, zblen in 0..22usize) {
        // Never panics; Ok only when every length is consistent.
        let b = vec![1u8; blen];
        let zb = vec![3i32; zblen];
        let packed = PackedB::new(Int8::U8(&b), k, n, false, &zb);
        prop_assert_eq!(packed.is_ok(), blen >= k * n && (zblen == 1 || zblen == n));
        let Ok(packed) = packed else { return Ok(()) };
        let a = vec![2i8; alen];
        let za = vec![5i32; zalen];
        let mut c = vec![SENTINEL; clen];
        let r = qgemm(m, Int8::I8(&a), lda, &za, &packed, &mut c, ldc, true);
        let ok = (zalen == 1 || zalen == m) && lda >= k && ldc >= n
            && (m == 0 || n == 0 || (alen >= (m - 1) * lda + k && clen >= (m - 1) * ldc + n));
        prop_assert_eq!(r.is_ok(), ok, "{:?}", r);
        if !ok {
            prop_assert!(c.iter().all(|&x| x == SENTINEL));
        }
    }
}

impl Case {
    fn parallel_hint(&self) -> bool {
        self.seed.is_multiple_of(2)
    }
}

#[test]
fn specific_errors() {
    let b = [0i8; 12];
    assert!(PackedB::new(Int8::I8(&b), 4, 4, false, &[0]).is_err()); // short B
    assert!(PackedB::new(Int8::I8(&b), 3, 4, true, &[0, 0]).is_err()); // zb length
    assert!(PackedB::new(Int8::I8(&b), usize::MAX, 2, false, &[0]).is_err()); // overflow
    let pb = PackedB::new(Int8::I8(&b), 3, 4, false, &[0; 4]).expect("valid B");
    let a = [0u8; 6];
    let mut c = [0i32; 8];
    assert!(qgemm(2, Int8::U8(&a), 3, &[0], &pb, &mut c, 3, false).is_err()); // ldc < n
    assert!(qgemm(2, Int8::U8(&a), 2, &[0], &pb, &mut c, 4, false).is_err()); // lda < k
    assert!(qgemm(2, Int8::U8(&a[..5]), 3, &[0], &pb, &mut c, 4, false).is_err()); // short A
    assert!(qgemm(2, Int8::U8(&a), 3, &[0], &pb, &mut c[..7], 4, false).is_err()); // short C
    assert!(qgemm(2, Int8::U8(&a), 3, &[0; 3], &pb, &mut c, 4, false).is_err()); // za length
    assert!(qgemm(usize::MAX, Int8::U8(&a), 3, &[0], &pb, &mut c, 4, false).is_err());
    assert!(qgemm(2, Int8::U8(&a), usize::MAX, &[0], &pb, &mut c, 4, false).is_err());
    assert!(qgemm(2, Int8::U8(&a), 3, &[0], &pb, &mut c, 4, false).is_ok());
    assert!(qgemm(2, Int8::U8(&a), 3, &[0], &pb, &mut c[..7], 3, false).is_err());
    // m == 0 writes nothing and needs no storage.
    assert!(qgemm(0, Int8::U8(&[]), 3, &[0], &pb, &mut [], 4, true).is_ok());
}

#[test]
fn larger_shapes_cross_blocks_and_panels() {
    // Several row blocks (k large makes them short), several panels,
    // ragged edges, every zero-point mode: all paths, both schedules.
    let shapes = [
        (40, 70, 2000, 3, 5),
        (77, 50, 1031, 0, 1),
        (1, 200, 1001, 0, 0),
        (2, 97, 515, 1, 0),
        (300, 24, 144, 0, 0),
        (600, 33, 27, 2, 3),
        (9, 161, 66, 0, 7),
    ];
    for (i, &(m, n, k, pa, pc)) in shapes.iter().enumerate() {
        // All 8 signedness × layout combinations; the zero-point modes
        // rotate with them.
        for mode in 0..8u8 {
            let cs = Case {
                m,
                n,
                k,
                lda: k + pa,
                ldc: n + pc,
                a_signed: mode & 1 == 1,
                b_signed: mode & 2 == 2,
                za_mode: (mode + i as u8) % 3,
                zb_mode: (mode + i as u8) % 5,
                trans: mode & 4 == 4,
                seed: (i as u64) << 8 | u64::from(mode),
            };
            if let Err(e) = check(&cs) {
                panic!("{cs:?}: {e}");
            }
        }
    }
}

#[test]
fn single_row_ignores_strides() {
    // With m == 1, lda and ldc are never multiplied: any value >= k / n.
    let b: Vec<i8> = (0..40 * 20).map(|i| (i * 7 % 256) as u8 as i8).collect();
    let a: Vec<u8> = (0..40).map(|i| (i * 13 % 256) as u8).collect();
    let pb = PackedB::new(Int8::I8(&b), 40, 20, false, &[-3]).expect("valid B");
    let mut want = vec![0i32; 20];
    let a32: Vec<i32> = a.iter().map(|&x| i32::from(x)).collect();
    let b32: Vec<i32> = b.iter().map(|&x| i32::from(x)).collect();
    naive(1, 20, 40, &a32, 40, &[9], &b32, false, &[-3], &mut want, 20);
    for isa in isas() {
        for par in [None, Some(0)] {
            let mut got = vec![0i32; 20];
            qgemm_impl(isa, 1, Int8::U8(&a), usize::MAX, &[9], &pb, &mut got, usize::MAX, par).expect("valid");
            assert_eq!(got, want, "{isa:?}");
        }
    }
}

#[test]
fn k_zero_gives_zero() {
    let pb = PackedB::new(Int8::U8(&[]), 0, 5, false, &[7]).expect("valid B");
    for isa in isas() {
        let mut c = [SENTINEL; 10];
        qgemm_impl(isa, 2, Int8::I8(&[]), 0, &[9, -3], &pb, &mut c, 5, None).expect("valid");
        assert_eq!(c, [0; 10]);
    }
}

#[test]
fn wraps_like_naive_on_overflow() {
    // (255 − 0)·(0 − 255) summed 40 000 times is −2.6e9: wraps in i32.
    let (m, n, k) = (3, 20, 40_000);
    for (a_signed, b_signed) in [(false, false), (true, true), (false, true), (true, false)] {
        let (a_val, za, b_val, zb): (i32, i32, i32, i32) = match (a_signed, b_signed) {
            (false, false) => (255, 0, 0, 255),
            (true, true) => (127, -128, -128, 127),
            (false, true) => (255, 0, -128, 127),
            (true, false) => (-128, 127, 255, 0),
        };
        let a8: Vec<u8> = vec![a_val as u8; m * k];
        let b8: Vec<u8> = vec![b_val as u8; k * n];
        let a_i8: Vec<i8> = a8.iter().map(|&x| x as i8).collect();
        let b_i8: Vec<i8> = b8.iter().map(|&x| x as i8).collect();
        let a = if a_signed { Int8::I8(&a_i8) } else { Int8::U8(&a8) };
        let b = if b_signed { Int8::I8(&b_i8) } else { Int8::U8(&b8) };
        let mut want = vec![0i32; m * n];
        naive(m, n, k, &vec![a_val; m * k], k, &[za], &vec![b_val; k * n], false, &[zb], &mut want, n);
        let exact = i64::from(a_val - za) * i64::from(b_val - zb) * k as i64;
        assert!(exact < i64::from(i32::MIN), "the case must overflow");
        assert_eq!(want[0], exact as i32, "naive wraps");
        let pb = PackedB::new(b, k, n, false, &[zb]).expect("valid B");
        for isa in isas() {
            for par in [None, Some(0)] {
                let mut got = vec![0i32; m * n];
                qgemm_impl(isa, m, a, k, &[za], &pb, &mut got, n, par).expect("valid");
                assert_eq!(got, want, "{isa:?}");
            }
        }
    }
}

#[test]
fn conv_as_transposed_gemm() {
    // ConvInteger via Cᵀ: patches (P × K) times Wᵀ, W given as M × K.
    let (p, kk, mm) = (200, 27, 32);
    let mut rng = Rng(42);
    let patches: Vec<u8> = (0..p * kk).map(|_| rng.byte()).collect();
    let w: Vec<i8> = (0..mm * kk).map(|_| rng.byte() as i8).collect();
    let zw: Vec<i32> = (0..mm).map(|_| rng.zp(true)).collect();
    let pb = PackedB::new(Int8::I8(&w), kk, mm, true, &zw).expect("valid W");
    let mut got = vec![0i32; p * mm];
    qgemm(p, Int8::U8(&patches), kk, &[17], &pb, &mut got, mm, true).expect("valid");
    for (q, row) in got.chunks(mm).enumerate() {
        for (o, &v) in row.iter().enumerate() {
            let want = (0..kk).fold(0i32, |s, i| {
                let x = i32::from(patches[q * kk + i]) - 17;
                s.wrapping_add(x.wrapping_mul(i32::from(w[o * kk + i]) - zw[o]))
            });
            assert_eq!(v, want);
        }
    }
}

proptest! {
    #![proptest_config(crate::test_support::config(64))]

    /// A block of a wider row-major B packed at run time (into reused memory) gives the same
    /// products as the block packed by `PackedB::new`, against the definition: u8 and i8, k
    /// and n off the 4-row and 16-column grid, one packing reused for two shapes in a row.
    #[test]
    fn repacked_block_matches_definition(k in 1usize..40, n in 1usize..120, extra in 0usize..20, m in 1usize..12,
                                         signed in any::<bool>(), seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut packed = PackedB::empty();
        for (k, n) in [(k, n), ((k * 7) % 39 + 1, (n * 5) % 119 + 1)] {
            let ldb = n + extra;
            let b: Vec<i32> = (0..k * ldb).map(|_| if signed { rng.random_range(-128..128) } else { rng.random_range(0..256) }).collect();
            let a: Vec<i32> = (0..m * k).map(|_| rng.random_range(0..256)).collect();
            let za: Vec<i32> = (0..m).map(|_| rng.random_range(0..256)).collect();
            let zb = if signed { rng.random_range(-128..128) } else { rng.random_range(0..256) };
            let (b8u, b8i): (Vec<u8>, Vec<i8>) = (b.iter().map(|v| *v as u8).collect(), b.iter().map(|v| *v as i8).collect());
            let bv = if signed { Int8::I8(&b8i) } else { Int8::U8(&b8u) };
            packed.repack_rows(bv, ldb, k, n, zb).map_err(TestCaseError::fail)?;
            let a8: Vec<u8> = a.iter().map(|v| *v as u8).collect();
            let block: Vec<i32> = (0..k).flat_map(|p| b[p * ldb..p * ldb + n].to_vec()).collect();
            let mut want = vec![0i32; m * n];
            naive(m, n, k, &a, k, &za, &block, false, &[zb], &mut want, n);
            for isa in isas() {
                let mut got = vec![0i32; m * n];
                qgemm_impl(isa, m, Int8::U8(&a8), k, &za, &packed, &mut got, n, None).map_err(TestCaseError::fail)?;
                prop_assert_eq!(&got, &want, "{:?} k {} n {}", isa, k, n);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// `qgemm_requant` stores ONNX Runtime's requantization of the definition's sums (written
    /// out here: the sum plus bias as f32, times the multiplier, rounded half to even, plus the
    /// zero point, saturated), leaves the gaps of `y` alone, and on a CPU without its kernel
    /// writes nothing and says so.
    #[test]
    fn requantized_store_matches_definition(cs in case(40, 70, 300), signed_y in any::<bool>(), narrow in any::<bool>()) {
        let Case { m, n, k, lda, ldc, .. } = cs;
        let mut rng = Rng(cs.seed ^ 0x5EED);
        let a: Vec<u8> = (0..(m - 1) * lda + k).map(|_| rng.byte()).collect();
        let b: Vec<i8> = (0..k * n).map(|_| rng.byte() as i8).collect();
        let a32: Vec<i32> = a.iter().map(|&x| i32::from(x)).collect();
        let b32: Vec<i32> = b.iter().map(|&x| i32::from(x)).collect();
        let za = zero_points(&mut rng, cs.za_mode, m, false);
        let zb = zero_points(&mut rng, cs.zb_mode, n, true);
        let mut sums = vec![0; (m - 1) * ldc + n];
        naive(m, n, k, &a32, lda, &za, &b32, cs.trans, &zb, &mut sums, ldc);
        let bias: Vec<i32> = (0..n).map(|_| (rng.next() % 20_001) as i32 - 10_000).collect();
        // Multipliers from 2⁻¹⁶ to 2⁻², some exactly powers of two (half-integer products);
        // now and then one above 1/2 (the product is then clamped before its conversion: with
        // 1000, beyond i32).
        let big = rng.next().is_multiple_of(4);
        let mult: Vec<f32> = (0..n)
            .map(|_| match rng.next() % 8 {
                0 if big => [0.75, 3.0, 1000.0][(rng.next() % 3) as usize],
                0..3 => 2f32.powi(-((rng.next() % 15) as i32 + 2)),
                _ => (rng.next() % 1000 + 1) as f32 * 2f32.powi(-20),
            })
            .collect();
        let full = if signed_y { (-128, 127) } else { (0, 255) };
        // A narrower range (a Relu folded in) now and then.
        let range = if narrow { (full.0 + 20, full.1 - 30) } else { full };
        let zy = ((rng.next() % 200) as i32 + full.0).clamp(range.0, range.1);
        let ldy = n + (rng.next() % 5) as usize;
        let mut want = vec![0xA5u8; (m - 1) * ldy + n + 2];
        for i in 0..m {
            for j in 0..n {
                let v = (sums[i * ldc + j].wrapping_add(bias[j]) as f32 * mult[j]).round_ties_even();
                let q = (v as i64 + i64::from(zy)).clamp(range.0.into(), range.1.into());
                want[i * ldy + j] = q as u8;
            }
        }
        let packed = PackedB::new(Int8::I8(&b), k, n, cs.trans, &zb).map_err(TestCaseError::fail)?;
        let q = Requant { bias: &bias, mult: &mult, zy, range };
        let mut got = vec![0xA5u8; want.len()];
        let fused = qgemm_requant(m, Int8::U8(&a), lda, &za, &packed, &q, &mut got, ldy, signed_y).map_err(TestCaseError::fail)?;
        prop_assert_eq!(fused, Isa::detected() == Isa::Avx512Vnni);
        if fused {
            prop_assert!(got == want, "requantized product differs");
        } else {
            prop_assert!(got.iter().all(|&x| x == 0xA5), "wrote without the kernel");
        }
    }
}

#[test]
fn requantized_store_rejects_bad_parameters() {
    let b = [1i8; 8];
    let packed = PackedB::new(Int8::I8(&b), 2, 4, false, &[0]).unwrap_or_else(|e| panic!("{e}"));
    let a = [3u8; 4];
    let mut y = [0u8; 8];
    let (bias, mult) = ([0; 4], [0.5f32; 4]);
    let mut run = |q: &Requant<'_>, signed| qgemm_requant(2, Int8::U8(&a), 2, &[0], &packed, q, &mut y, 4, signed);
    if Isa::detected() != Isa::Avx512Vnni {
        return;
    }
    let ok = Requant { bias: &bias, mult: &mult, zy: 0, range: (0, 255) };
    assert_eq!(run(&ok, false), Ok(true));
    for (q, signed, what) in [
        (Requant { bias: &bias[..3], ..ok }, false, "3 biases"),
        (Requant { mult: &mult[..2], ..ok }, false, "2 multipliers"),
        (Requant { range: (0, 255), ..ok }, true, "range"),
        (Requant { zy: 300, ..ok }, false, "zero point 300"),
    ] {
        let err = run(&q, signed).expect_err(what);
        assert!(err.contains(what), "{err}");
    }
}
