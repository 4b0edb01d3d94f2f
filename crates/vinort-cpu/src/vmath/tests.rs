use super::*;
use proptest::prelude::*;

// ---------------------------------------------------------------------
// References and error measurement
// ---------------------------------------------------------------------

/// erf in f64, written independently of the code under test. For
/// `|x| < 2` the series
/// `erf(a) = 2/√π · e^{-a²} · Σ_{n≥0} 2^n a^{2n+1} / (1·3·…·(2n+1))`
/// (all terms positive, so no cancellation), above it `1 - erfc(a)` from
/// the continued fraction [`erfc_cf`] (±1 from 6 on). Both agree with
/// literature values to 1e-15 (tested below).
fn erf_ref(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() {
        return f64::NAN;
    }
    let v = if a < 2.0 {
        erf_series(a)
    } else if a < 6.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0 // erfc(6) = 2e-17 is below half an f64 ulp of 1
    };
    v.copysign(x)
}

/// The series with compensated (Neumaier) summation and `e^{-a²}`
/// computed from the exact product `a·a = hi + lo`, so that it stays
/// within 1e-15 up to a ≈ 2.5.
fn erf_series(a: f64) -> f64 {
    let a2 = 2.0 * a * a;
    let (mut term, mut sum, mut comp, mut k) = (a, a, 0.0, 0.0);
    loop {
        k += 1.0;
        term *= a2 / (2.0 * k + 1.0);
        let t = sum + term;
        comp += if sum.abs() >= term.abs() { (sum - t) + term } else { (term - t) + sum };
        sum = t;
        if term <= sum * 1e-18 {
            break;
        }
    }
    let hi = a * a;
    let lo = a.mul_add(a, -hi);
    std::f64::consts::FRAC_2_SQRT_PI * ((-hi).exp() * (1.0 - lo)) * (sum + comp)
}

/// erfc in f64 by the continued fraction
/// `erfc(a) = e^{-a²}/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + …))))`,
/// evaluated backwards (400 terms: converged to f64 precision for
/// a ≥ 1.5).
fn erfc_cf(a: f64) -> f64 {
    let mut f = a;
    for k in (1..400).rev() {
        f = a + (k as f64 / 2.0) / f;
    }
    (-a * a).exp() / (std::f64::consts::PI.sqrt() * f)
}

/// Spacing of f32 values at magnitude |w| (subnormal spacing below
/// f32::MIN_POSITIVE).
fn ulp_at(w: f64) -> f64 {
    let w = w.abs();
    if w < f32::MIN_POSITIVE as f64 { 2f64.powi(-149) } else { 2f64.powi(w.log2().floor() as i32 - 23) }
}

/// Error of `got` against the exact value `want` in f32 ulps at `want`.
/// Infinite results count as exact only if `want` rounds to that
/// infinity.
fn ulp_err(got: f32, want: f64) -> f64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if got.is_infinite() || (want as f32).is_infinite() {
        return if got == want as f32 { 0.0 } else { f64::INFINITY };
    }
    (got as f64 - want).abs() / ulp_at(want)
}

#[derive(Default)]
struct Stats {
    n: u64,
    ulp: (f64, f32),
    abs: (f64, f32),
    rel: (f64, f32),
}

impl Stats {
    /// Records `got = f(x)` against the exact `want`. Relative error is
    /// only recorded where `want` is a normal f32 (subnormal results have
    /// fewer significant bits; their error shows in ulps).
    fn add(&mut self, x: f32, got: f32, want: f64) {
        self.n += 1;
        let u = ulp_err(got, want);
        if u > self.ulp.0 {
            self.ulp = (u, x);
        }
        if want.is_finite() && got.is_finite() {
            let a = (got as f64 - want).abs();
            if a > self.abs.0 {
                self.abs = (a, x);
            }
            if want.abs() >= f32::MIN_POSITIVE as f64 {
                let r = a / want.abs();
                if r > self.rel.0 {
                    self.rel = (r, x);
                }
            }
        }
    }

    fn report(&self, what: &str) {
        println!(
            "{what}: {} points, max {:.3} ulp (x = {:e}), abs {:.3e} (x = {:e}), rel {:.3e} (x = {:e})",
            self.n, self.ulp.0, self.ulp.1, self.abs.0, self.abs.1, self.rel.0, self.rel.1
        );
    }
}

/// Deterministic xorshift64 for the random sweeps.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo as f64 + u * (hi as f64 - lo as f64)) as f32
    }
}

/// Debug builds (unoptimized, e.g. a plain `cargo test`) visit 17x
/// fewer points in the sweeps below; the numbers quoted in the module
/// docs come from `cargo test --release`.
const THIN: u32 = if cfg!(debug_assertions) { 17 } else { 1 };

/// Feeds `visit` the grid `lo + i·step` over [lo, hi].
fn grid(lo: f64, hi: f64, step: f64, mut visit: impl FnMut(f32)) {
    let step = step * THIN as f64;
    let steps = ((hi - lo) / step).round() as u64;
    for i in 0..=steps {
        visit((lo + i as f64 * step) as f32);
    }
}

/// Feeds `visit` `count` uniform random points in [lo, hi).
fn random(lo: f32, hi: f32, count: usize, mut visit: impl FnMut(f32)) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..count / THIN as usize {
        visit(rng.uniform(lo, hi));
    }
}

/// Feeds `visit` every `stride`-th f32 bit pattern (both signs, all
/// exponents) that lies in [lo, hi] (so no NaN).
fn bit_patterns(lo: f32, hi: f32, stride: u32, mut visit: impl FnMut(f32)) {
    let stride = stride * THIN;
    let mut bits = 0u32;
    loop {
        let x = f32::from_bits(bits);
        if x >= lo && x <= hi {
            visit(x);
        }
        match bits.checked_add(stride) {
            Some(b) => bits = b,
            None => break,
        }
    }
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

// ---------------------------------------------------------------------
// exp
// ---------------------------------------------------------------------

#[test]
fn exp_accuracy() {
    exp_accuracy_with::<false>();
    exp_accuracy_with::<true>();
}

fn exp_accuracy_with<const FMA: bool>() {
    let mut st = Stats::default();
    let mut check = |x: f32| st.add(x, exp::<FMA>(x), (x as f64).exp());
    grid(-87.0, 88.0, 1e-4, &mut check);
    random(-87.0, 88.0, 4_000_000, &mut check);
    bit_patterns(-87.0, 88.0, 31, &mut check);
    st.report("exp on [-87, 88]");
    assert!(st.ulp.0 <= 2.0, "exp: {} ulp at {}", st.ulp.0, st.ulp.1);
}

/// Every f32 whose exp is subnormal, plus the overflow edge: errors in
/// units of the subnormal spacing 2^-149, and monotonicity.
#[test]
fn exp_subnormal_and_overflow_ranges() {
    exp_subnormal_and_overflow_ranges_with::<false>();
    exp_subnormal_and_overflow_ranges_with::<true>();
}

fn exp_subnormal_and_overflow_ranges_with<const FMA: bool>() {
    let mut st = Stats::default();
    let mut prev = 0.0f32;
    let mut x = -104.0f32;
    while x <= -87.0 {
        let y = exp::<FMA>(x);
        st.add(x, y, (x as f64).exp());
        assert!(y >= prev, "exp not monotone at {x}: {y} < {prev}");
        prev = y;
        x = f32::from_bits(x.to_bits() - 1); // next toward zero
    }
    st.report("exp on [-104, -87] (all f32)");
    assert!(st.ulp.0 <= 1.0, "exp: {} ulp at {}", st.ulp.0, st.ulp.1);

    let mut st = Stats::default();
    let mut x = 88.0f32;
    while x <= 89.0 {
        st.add(x, exp::<FMA>(x), (x as f64).exp());
        x = f32::from_bits(x.to_bits() + 1);
    }
    st.report("exp on [88, 89] (all f32)");
    assert!(st.ulp.0 <= 2.0, "exp: {} ulp at {}", st.ulp.0, st.ulp.1);
    // exp::<FMA>(x) is finite up to ln(f32::MAX) = 88.72283906 and +inf after.
    // e^x rounds to +inf from x = 128·ln2 + ln(1 - 2^-25) = 88.72283908
    // on: the f32 just below it is 0x42B17217 = 88.722832.
    assert!(exp::<FMA>(f32::from_bits(0x42B1_7217)).is_finite());
    assert_eq!(exp::<FMA>(f32::from_bits(0x42B1_7218)), f32::INFINITY);
    // e^x rounds to 0 below x = -150·ln2 = -103.9720771: the f32s either
    // side are 0xC2CFF1B4 = -103.972076 and 0xC2CFF1B5 = -103.972084.
    assert_eq!(exp::<FMA>(f32::from_bits(0xC2CF_F1B4)), f32::from_bits(1));
    assert_eq!(exp::<FMA>(f32::from_bits(0xC2CF_F1B5)).to_bits(), 0);
}

#[test]
fn exp_special_values() {
    exp_special_values_with::<false>();
    exp_special_values_with::<true>();
}

fn exp_special_values_with<const FMA: bool>() {
    assert!(exp::<FMA>(f32::NAN).is_nan());
    assert!(exp::<FMA>(-f32::NAN).is_nan());
    assert_eq!(exp::<FMA>(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp::<FMA>(f32::NEG_INFINITY).to_bits(), 0);
    assert_eq!(exp::<FMA>(f32::MAX), f32::INFINITY);
    assert_eq!(exp::<FMA>(f32::MIN).to_bits(), 0);
    assert_eq!(exp::<FMA>(0.0), 1.0);
    assert_eq!(exp::<FMA>(-0.0), 1.0);
    assert_eq!(exp::<FMA>(f32::from_bits(1)), 1.0);
    assert_eq!(exp::<FMA>(-f32::from_bits(1)), 1.0);
    assert_eq!(exp::<FMA>(f32::MIN_POSITIVE), 1.0);
    assert_eq!(exp::<FMA>(1.0), std::f32::consts::E);
}

// ---------------------------------------------------------------------
// erf
// ---------------------------------------------------------------------

#[test]
fn erf_reference_is_sound() {
    // Literature values (Abramowitz & Stegun table 7.1 / DLMF), 16 digits.
    let table = [
        (0.1, 0.112_462_916_018_284_9),
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (1.5, 0.966_105_146_475_310_7),
        (2.0, 0.995_322_265_018_952_7),
        (2.5, 0.999_593_047_982_555),
        (3.0, 0.999_977_909_503_001_4),
        (3.5, 0.999_999_256_901_627_7),
    ];
    for (x, want) in table {
        let got = erf_ref(x);
        assert!((got - want).abs() < 1e-15, "erf_ref({x}) = {got}, want {want}");
        assert_eq!(erf_ref(-x), -got);
    }
    // The two methods agree where both are accurate.
    let mut a = 1.5;
    while a < 2.5 {
        let (s, c) = (erf_series(a), 1.0 - erfc_cf(a));
        assert!((s - c).abs() < 1e-15, "erf_series({a}) = {s} vs 1 - erfc_cf = {c}");
        a += 0.001;
    }
}

#[test]
fn erf_accuracy() {
    erf_accuracy_with::<false>();
    erf_accuracy_with::<true>();
}

fn erf_accuracy_with<const FMA: bool>() {
    let mut all = Stats::default();
    let mut inner = Stats::default();
    let mut check = |x: f32| {
        let (got, want) = (erf::<FMA>(x), erf_ref(x as f64));
        all.add(x, got, want);
        if x.abs() < 1.0 {
            inner.add(x, got, want);
        }
    };
    grid(-10.0, 10.0, 1e-4, &mut check);
    grid(-1.0, 1.0, 1e-6, &mut check);
    random(-6.0, 6.0, 4_000_000, &mut check);
    bit_patterns(f32::MIN, f32::MAX, 61, &mut check);
    all.report("erf everywhere");
    inner.report("erf on |x| < 1");
    assert!(all.abs.0 <= 2e-7, "erf abs error {} at {}", all.abs.0, all.abs.1);
    assert!(inner.rel.0 <= 4e-7, "erf rel error {} at {}", inner.rel.0, inner.rel.1);
}

#[test]
fn erf_special_values() {
    erf_special_values_with::<false>();
    erf_special_values_with::<true>();
}

fn erf_special_values_with<const FMA: bool>() {
    assert_eq!(erf::<FMA>(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(erf::<FMA>(-0.0).to_bits(), (-0.0f32).to_bits());
    assert!(erf::<FMA>(f32::NAN).is_nan());
    assert!(erf::<FMA>(-f32::NAN).is_nan());
    assert_eq!(erf::<FMA>(f32::INFINITY), 1.0);
    assert_eq!(erf::<FMA>(f32::NEG_INFINITY), -1.0);
    assert_eq!(erf::<FMA>(f32::MAX), 1.0);
    assert_eq!(erf::<FMA>(f32::MIN), -1.0);
    assert_eq!(erf::<FMA>(4.0), 1.0);
    assert_eq!(erf::<FMA>(1e30), 1.0);
    bit_patterns(3.92, 1e6, 7, |x| {
        assert_eq!(erf::<FMA>(x), 1.0, "erf::<FMA>({x})");
        assert_eq!(erf::<FMA>(-x), -1.0, "erf::<FMA>({})", -x);
    });
    // Subnormal and tiny inputs: erf::<FMA>(x) ≈ 2/√π·x, sign kept.
    for bits in [1u32, 2, 3, 1000, 0x007F_FFFF, 0x0080_0000, 0x1000_0000] {
        let x = f32::from_bits(bits);
        assert!(ulp_err(erf::<FMA>(x), erf_ref(x as f64)) <= 1.0, "erf::<FMA>({x:e})");
        assert_eq!(erf::<FMA>(-x), -erf::<FMA>(x));
        assert!(erf::<FMA>(x) > 0.0);
    }
}

// ---------------------------------------------------------------------
// tanh
// ---------------------------------------------------------------------

#[test]
fn tanh_accuracy() {
    tanh_accuracy_with::<false>();
    tanh_accuracy_with::<true>();
}

fn tanh_accuracy_with<const FMA: bool>() {
    let mut st = Stats::default();
    let mut check = |x: f32| st.add(x, tanh::<FMA>(x), (x as f64).tanh());
    grid(-10.0, 10.0, 1e-4, &mut check);
    grid(-1.0, 1.0, 1e-6, &mut check);
    random(-10.0, 10.0, 4_000_000, &mut check);
    bit_patterns(f32::MIN, f32::MAX, 61, &mut check);
    st.report("tanh everywhere");
    assert!(st.ulp.0 <= 4.0, "tanh: {} ulp at {}", st.ulp.0, st.ulp.1);
}

#[test]
fn tanh_special_values() {
    tanh_special_values_with::<false>();
    tanh_special_values_with::<true>();
}

fn tanh_special_values_with<const FMA: bool>() {
    assert_eq!(tanh::<FMA>(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(tanh::<FMA>(-0.0).to_bits(), (-0.0f32).to_bits());
    assert!(tanh::<FMA>(f32::NAN).is_nan());
    assert!(tanh::<FMA>(-f32::NAN).is_nan());
    assert_eq!(tanh::<FMA>(f32::INFINITY), 1.0);
    assert_eq!(tanh::<FMA>(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanh::<FMA>(f32::MAX), 1.0);
    assert_eq!(tanh::<FMA>(f32::MIN), -1.0);
    assert_eq!(tanh::<FMA>(9.1), 1.0);
    assert_eq!(tanh::<FMA>(-9.1), -1.0);
    assert_eq!(tanh::<FMA>(50.0), 1.0);
    // Saturated, without NaN, through exp's overflow to +inf (x > 44.4).
    bit_patterns(9.02, 1e6, 7, |x| {
        assert_eq!(tanh::<FMA>(x), 1.0, "tanh::<FMA>({x})");
        assert_eq!(tanh::<FMA>(-x), -1.0, "tanh::<FMA>({})", -x);
    });
    // Subnormal and tiny inputs: tanh::<FMA>(x) = x in f32.
    for bits in [1u32, 2, 1000, 0x007F_FFFF, 0x0080_0000, 0x3000_0000] {
        let x = f32::from_bits(bits);
        assert_eq!(tanh::<FMA>(x), x);
        assert_eq!(tanh::<FMA>(-x), -x);
    }
}

// ---------------------------------------------------------------------
// sigmoid
// ---------------------------------------------------------------------

#[test]
fn sigmoid_accuracy() {
    sigmoid_accuracy_with::<false>();
    sigmoid_accuracy_with::<true>();
}

fn sigmoid_accuracy_with<const FMA: bool>() {
    let reference = |x: f32| 1.0 / (1.0 + (-(x as f64)).exp());
    let mut normal = Stats::default();
    let mut tiny = Stats::default();
    let mut check = |x: f32| {
        let (got, want) = (sigmoid::<FMA>(x), reference(x));
        assert_eq!(got.to_bits(), (1.0 / (1.0 + exp::<FMA>(-x))).to_bits());
        if x >= -87.0 {
            normal.add(x, got, want);
        } else {
            tiny.add(x, got, want);
        }
    };
    grid(-10.0, 10.0, 1e-4, &mut check);
    grid(-120.0, 120.0, 1e-3, &mut check);
    random(-20.0, 20.0, 4_000_000, &mut check);
    bit_patterns(f32::MIN, f32::MAX, 61, &mut check);
    normal.report("sigmoid for x >= -87");
    // Below -88.72 exp::<FMA>(-x) overflows and sigmoid is 0 instead of e^x.
    tiny.report("sigmoid for x < -87");
    assert!(normal.ulp.0 <= 3.0, "sigmoid: {} ulp at {}", normal.ulp.0, normal.ulp.1);
    assert!(tiny.abs.0 <= 3e-39, "sigmoid: abs error {} at {}", tiny.abs.0, tiny.abs.1);
}

#[test]
fn sigmoid_special_values() {
    sigmoid_special_values_with::<false>();
    sigmoid_special_values_with::<true>();
}

fn sigmoid_special_values_with<const FMA: bool>() {
    assert_eq!(sigmoid::<FMA>(0.0), 0.5);
    assert_eq!(sigmoid::<FMA>(-0.0), 0.5);
    assert!(sigmoid::<FMA>(f32::NAN).is_nan());
    assert_eq!(sigmoid::<FMA>(f32::INFINITY), 1.0);
    assert_eq!(sigmoid::<FMA>(f32::NEG_INFINITY), 0.0);
    assert_eq!(sigmoid::<FMA>(f32::MAX), 1.0);
    assert_eq!(sigmoid::<FMA>(f32::MIN), 0.0);
    assert_eq!(sigmoid::<FMA>(100.0), 1.0);
    assert_eq!(sigmoid::<FMA>(-100.0), 0.0);
}

// ---------------------------------------------------------------------
// Properties (proptest)
// ---------------------------------------------------------------------

/// The properties the proptests below check, for one form of the functions.
fn exp_props<const FMA: bool>(x: f32) -> Result<(), TestCaseError> {
    let y = exp::<FMA>(x);
    prop_assert!(y >= 0.0 || x.is_nan());
    prop_assert_eq!(y.is_nan(), x.is_nan());
    let up = f32::from_bits(x.to_bits().wrapping_add(if x >= 0.0 { 1 } else { u32::MAX }));
    if x.is_finite() && x < 88.0 && x > -104.5 {
        prop_assert!(exp::<FMA>(up) >= y || exp::<FMA>(up) >= y * (1.0 - 3e-7));
    }
    if (-87.0..88.0).contains(&x) {
        prop_assert!(ulp_err(y, (x as f64).exp()) <= 2.0);
    }
    Ok(())
}

fn erf_props<const FMA: bool>(x: f32) -> Result<(), TestCaseError> {
    let y = erf::<FMA>(x);
    prop_assert_eq!(y.is_nan(), x.is_nan());
    if !x.is_nan() {
        prop_assert!(y.abs() <= 1.0);
        prop_assert_eq!(erf::<FMA>(-x).to_bits(), (-y).to_bits());
        prop_assert!((y as f64 - erf_ref(x as f64)).abs() <= 2e-7);
    }
    Ok(())
}

fn tanh_props<const FMA: bool>(x: f32) -> Result<(), TestCaseError> {
    let y = tanh::<FMA>(x);
    prop_assert_eq!(y.is_nan(), x.is_nan());
    if !x.is_nan() {
        prop_assert!(y.abs() <= 1.0);
        prop_assert_eq!(tanh::<FMA>(-x).to_bits(), (-y).to_bits());
        prop_assert!(ulp_err(y, (x as f64).tanh()) <= 4.0);
    }
    Ok(())
}

fn sigmoid_props<const FMA: bool>(x: f32) -> Result<(), TestCaseError> {
    let y = sigmoid::<FMA>(x);
    prop_assert_eq!(y.to_bits(), (1.0 / (1.0 + exp::<FMA>(-x))).to_bits());
    prop_assert_eq!(y.is_nan(), x.is_nan());
    if !x.is_nan() {
        prop_assert!((0.0..=1.0).contains(&y));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 1_000 } else { 20_000 }))]

    #[test]
    fn prop_exp_ulp(x in -87.0f32..88.0) {
        exp_props::<false>(x)?;
        exp_props::<true>(x)?;
    }

    #[test]
    fn prop_exp_nonnegative_and_monotone(x in proptest::num::f32::ANY) {
        exp_props::<false>(x)?;
        exp_props::<true>(x)?;
    }

    #[test]
    fn prop_erf(x in proptest::num::f32::ANY) {
        erf_props::<false>(x)?;
        erf_props::<true>(x)?;
    }

    #[test]
    fn prop_tanh(x in proptest::num::f32::ANY) {
        tanh_props::<false>(x)?;
        tanh_props::<true>(x)?;
    }

    #[test]
    fn prop_sigmoid(x in proptest::num::f32::ANY) {
        sigmoid_props::<false>(x)?;
        sigmoid_props::<true>(x)?;
    }

}

// ---------------------------------------------------------------------
// Dispatch: every code path gives the bits of its scalar form
// ---------------------------------------------------------------------

/// Inputs: a grid over [-120, 120], random bit patterns and special
/// values; an odd length so the vector loops' remainders run too.
fn dispatch_inputs() -> Vec<f32> {
    let mut v: Vec<f32> = (0..480_001).map(|i| -120.0 + i as f32 * 5e-4).collect();
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    v.extend((0..500_000).map(|_| f32::from_bits(rng.next() as u32)));
    v.extend((0..500_000).map(|_| rng.uniform(-12.0, 12.0)));
    v.extend([
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        88.722_84,
        -103.972_08,
    ]);
    v
}

/// Whether the dispatched loops run a path with fused multiply-adds.
fn dispatched_fma() -> bool {
    cfg!(target_arch = "x86_64") && (crate::isa::avx512() || crate::isa::avx2())
}

fn check_all_paths(name: &str, f: Fun) {
    use super::fun::*;
    let xs = dispatch_inputs();
    let unfused: Vec<f32> = xs.iter().map(|&x| f.eval::<false>(x)).collect();
    let fused: Vec<f32> = xs.iter().map(|&x| f.eval::<true>(x)).collect();
    let dispatched = if dispatched_fma() { &fused } else { &unfused };
    let mut paths: Vec<(&str, Vec<f32>, &Vec<f32>)> = Vec::new();

    let mut y = xs.clone();
    apply_in_place(f, &mut y);
    paths.push(("apply_in_place (dispatched)", y, dispatched));
    let mut y = vec![0.0; xs.len()];
    apply_into(f, &xs, &mut y);
    paths.push(("apply_into (dispatched)", y, dispatched));
    let mut y = xs.clone();
    in_place_portable::<false>(f, &mut y);
    paths.push(("portable", y, &unfused));
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            let mut y = xs.clone();
            // SAFETY: AVX-512F support was checked just above.
            unsafe { in_place_avx512(f, &mut y) };
            paths.push(("avx512f in place", y, &fused));
            let mut y = vec![0.0; xs.len()];
            // SAFETY: AVX-512F support was checked just above.
            unsafe { into_avx512(f, &xs, &mut y) };
            paths.push(("avx512f into", y, &fused));
        } else {
            println!("{name}: AVX-512F not available, path not tested");
        }
        if crate::isa::avx2() {
            let mut y = xs.clone();
            // SAFETY: AVX2 and FMA support were checked just above.
            unsafe { in_place_avx2(f, &mut y) };
            paths.push(("avx2+fma in place", y, &fused));
            let mut y = vec![0.0; xs.len()];
            // SAFETY: AVX2 and FMA support were checked just above.
            unsafe { into_avx2(f, &xs, &mut y) };
            paths.push(("avx2+fma into", y, &fused));
        } else {
            println!("{name}: AVX2+FMA not available, path not tested");
        }
    }
    for (path, ys, scalar) in &paths {
        for ((&x, &s), &y) in xs.iter().zip(scalar.iter()).zip(ys) {
            assert!(same(s, y), "{name} via {path}: f({x:e}) = {y:e}, scalar {s:e}");
        }
    }
    println!("{name}: {} inputs bit-identical to the scalar form on {} paths", xs.len(), paths.len());
}

#[test]
fn dispatch_paths_are_bit_identical() {
    check_all_paths("exp", Fun::Exp);
    check_all_paths("erf", Fun::Erf);
    check_all_paths("tanh", Fun::Tanh);
    check_all_paths("sigmoid", Fun::Sigmoid);
    check_all_paths("gelu", Fun::Gelu);
    check_all_paths("hard swish", Fun::HardSwish);
    check_all_paths("leaky relu", Fun::LeakyRelu(0.01));
}

#[test]
#[should_panic(expected = "length mismatch")]
fn apply_into_rejects_length_mismatch() {
    apply_into(Fun::Exp, &[1.0, 2.0], &mut [0.0]);
}

proptest! {
    /// Each element function's dispatched loops (into and in place) give, element for element,
    /// the bits of the function at that value (NaN as NaN), and the math functions themselves
    /// are what the module's accuracy tests measured.
    #[test]
    fn fun_loops_match_scalar(xs in proptest::collection::vec(proptest::num::f32::ANY, 0..200), which in 0usize..10) {
        let fun = [Fun::Exp, Fun::Tanh, Fun::Sigmoid, Fun::Erf, Fun::Gelu, Fun::Relu, Fun::LeakyRelu(0.1),
                   Fun::Clip(-1.5, 6.0), Fun::HardSigmoid(0.2, 0.5), Fun::HardSwish][which];
        let mut out = vec![0.0; xs.len()];
        apply_into(fun, &xs, &mut out);
        let mut inplace = xs.clone();
        apply_in_place(fun, &mut inplace);
        let scalar: Vec<f32> = if dispatched_fma() {
            xs.iter().map(|v| fun.eval::<true>(*v)).collect()
        } else {
            xs.iter().map(|v| fun.eval::<false>(*v)).collect()
        };
        let reference: [fn(f32) -> f32; 5] = if dispatched_fma() {
            [exp::<true>, tanh::<true>, sigmoid::<true>, erf::<true>, gelu::<true>]
        } else {
            [exp::<false>, tanh::<false>, sigmoid::<false>, erf::<false>, gelu::<false>]
        };
        for (i, x) in xs.iter().enumerate() {
            let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            prop_assert!(same(out[i], scalar[i]) && same(inplace[i], scalar[i]), "{fun:?}({x}): {} {} {}", out[i], inplace[i], scalar[i]);
            if let Some(f) = reference.get(which) {
                prop_assert!(same(scalar[i], f(*x)), "{fun:?}({x})");
            }
        }
    }
}
