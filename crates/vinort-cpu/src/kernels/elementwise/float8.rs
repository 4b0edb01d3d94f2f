//! Encoders and decoders for the small float formats
//! [Cast](https://onnx.ai/onnx/operators/onnx__Cast.html) converts to and from: the 8-bit
//! formats of <https://onnx.ai/onnx/technical/float8.html> (E4M3FN, E4M3FNUZ, E5M2,
//! E5M2FNUZ), the power-of-two scale FLOAT8E8M0, and the saturating formats without
//! infinities or NaN: FLOAT4E2M1 (<https://onnx.ai/onnx/technical/float4.html>), FLOAT6E2M3
//! and FLOAT6E3M2 (the OCP Microscaling elements).
//!
//! Every value goes through `f64`, which holds each of these formats (and f16, bf16, f32)
//! exactly, so a conversion from one of those rounds once. Rounding is to nearest, ties to
//! even. Out-of-range values follow the two tables of the Cast spec: with `saturate` they
//! clamp to the largest finite value; without, E5M2 gives ±inf and the other 8-bit formats
//! their NaN. The 4- and 6-bit formats always saturate (`saturate` only covers float 8).

/// How a format spends its top exponent code and its negative zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    /// IEEE 754 style: the all-ones exponent holds ±inf (mantissa 0) and NaNs (E5M2).
    Ieee,
    /// No infinities; only `S.1111.111` is NaN (E4M3FN).
    Fn,
    /// No infinities and no negative zero: `0x80` is the single NaN (the FNUZ formats).
    Fnuz,
    /// Neither infinities nor NaN: every code is a finite number (FLOAT4 and FLOAT6).
    Finite,
}

/// A sign / exponent / mantissa format of at most 8 bits, stored in the low bits of a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MiniFloat {
    exp_bits: u32,
    man_bits: u32,
    bias: i32,
    special: Special,
}

pub(super) const E4M3FN: MiniFloat = MiniFloat { exp_bits: 4, man_bits: 3, bias: 7, special: Special::Fn };
pub(super) const E4M3FNUZ: MiniFloat = MiniFloat { exp_bits: 4, man_bits: 3, bias: 8, special: Special::Fnuz };
pub(super) const E5M2: MiniFloat = MiniFloat { exp_bits: 5, man_bits: 2, bias: 15, special: Special::Ieee };
pub(super) const E5M2FNUZ: MiniFloat = MiniFloat { exp_bits: 5, man_bits: 2, bias: 16, special: Special::Fnuz };
pub(super) const E2M1: MiniFloat = MiniFloat { exp_bits: 2, man_bits: 1, bias: 1, special: Special::Finite };
pub(super) const E2M3: MiniFloat = MiniFloat { exp_bits: 2, man_bits: 3, bias: 1, special: Special::Finite };
pub(super) const E3M2: MiniFloat = MiniFloat { exp_bits: 3, man_bits: 2, bias: 3, special: Special::Finite };

/// `2^k` for `k` in f64's normal exponent range.
fn pow2(k: i32) -> f64 {
    let k = k.clamp(-1022, 1023);
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `floor(log2(a))` for a positive finite `a`; f64 subnormals answer -1023, below every
/// format here.
fn floor_log2(a: f64) -> i32 {
    ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023
}

impl MiniFloat {
    /// The sign bit.
    fn sign_bit(self) -> u8 {
        1 << (self.exp_bits + self.man_bits)
    }

    /// The magnitude bits (exponent and mantissa) all set.
    fn mag_mask(self) -> u8 {
        self.sign_bit() - 1
    }

    /// The magnitude code of the largest finite value.
    fn max_code(self) -> u8 {
        match self.special {
            // The exponent below all-ones, with a full mantissa.
            Special::Ieee => self.mag_mask() - (1 << self.man_bits),
            Special::Fn => self.mag_mask() - 1,
            Special::Fnuz | Special::Finite => self.mag_mask(),
        }
    }

    /// The magnitude code of infinity in an IEEE-style format: all-ones exponent, mantissa 0.
    fn inf_code(self) -> u8 {
        self.mag_mask() & !((1 << self.man_bits) - 1)
    }

    /// The value of a code (bits above the format's sign bit are ignored).
    pub(super) fn decode(self, bits: u8) -> f64 {
        let bits = bits & (self.sign_bit() | self.mag_mask());
        let mag = bits & self.mag_mask();
        let neg = bits & self.sign_bit() != 0;
        let exp_all = (1u8 << self.exp_bits) - 1;
        let e = mag >> self.man_bits;
        let m = mag & ((1 << self.man_bits) - 1);
        let v = match self.special {
            Special::Fnuz if bits == self.sign_bit() => return f64::NAN,
            Special::Fn if mag == self.mag_mask() => f64::NAN,
            Special::Ieee if e == exp_all && m != 0 => f64::NAN,
            Special::Ieee if e == exp_all => f64::INFINITY,
            _ if e == 0 => f64::from(m) * pow2(1 - self.bias - self.man_bits as i32),
            _ => f64::from(m | (1 << self.man_bits)) * pow2(i32::from(e) - self.bias - self.man_bits as i32),
        };
        if neg { -v } else { v }
    }

    /// The magnitude code of a finite `a >= 0` rounded to nearest even, or `None` when the
    /// rounded value is past every finite exponent (the caller decides what overflow means).
    /// A result above [`Self::max_code`] but `Some` is also an overflow.
    fn round_magnitude(self, a: f64) -> Option<u32> {
        if a == 0.0 {
            return Some(0);
        }
        let m = self.man_bits as i32;
        // Subnormals share the quantum of the lowest normal binade.
        let e = floor_log2(a).max(1 - self.bias);
        let top = (1 << self.exp_bits) - 1 - self.bias;
        if e > top {
            return None;
        }
        // Exact: scaling by a power of two, and `a` has far fewer significant bits than f64
        // can hold below this exponent range.
        let n = (a * pow2(m - e)).round_ties_even() as u32;
        // For a normal binade n is in [2^m, 2^(m+1)], and (e + bias - 1) << m + n is the code;
        // n = 2^(m+1) carries into the next exponent. The subnormal binade (e + bias = 1)
        // gives the code n directly, and n = 2^m is the smallest normal.
        Some((((e + self.bias - 1) as u32) << m) + n)
    }

    /// `x` rounded to this format. `saturate` picks the Cast table for out-of-range values;
    /// the 4- and 6-bit formats always saturate.
    pub(super) fn encode(self, x: f64, saturate: bool) -> u8 {
        let sign = if x.is_sign_negative() { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return match self.special {
                // The quiet NaN: all-ones exponent, top mantissa bit.
                Special::Ieee => sign | self.inf_code() | (1 << (self.man_bits - 1)),
                Special::Fn => sign | self.mag_mask(),
                Special::Fnuz => 0x80,
                // No NaN to give: zero, with the sign bit flipped as the ONNX reference
                // implementation (ml_dtypes) does, so results match its test data bit for bit.
                Special::Finite => sign ^ self.sign_bit(),
            };
        }
        let code = if x.is_infinite() { None } else { self.round_magnitude(x.abs()) };
        match code {
            Some(c) if c <= u32::from(self.max_code()) => {
                if c == 0 && self.special == Special::Fnuz {
                    0
                } else {
                    sign | c as u8
                }
            }
            _ if saturate || self.special == Special::Finite => sign | self.max_code(),
            _ => match self.special {
                Special::Ieee => sign | self.inf_code(),
                Special::Fnuz => 0x80,
                _ => sign | self.mag_mask(),
            },
        }
    }
}

/// How Cast rounds to FLOAT8E8M0 (the `round_mode` attribute, Cast-24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RoundMode {
    /// Away from zero (the default).
    Up,
    /// Toward zero.
    Down,
    /// To the nearer power of two, ties up.
    Nearest,
}

/// The E8M0 NaN code.
const E8M0_NAN: u8 = 0xFF;
/// The E8M0 code of its largest value, 2^127.
const E8M0_MAX: u8 = 0xFE;

/// The value of a FLOAT8E8M0 code: `2^(bits - 127)`, or NaN for `0xFF`.
pub(super) fn e8m0_decode(bits: u8) -> f64 {
    if bits == E8M0_NAN { f64::NAN } else { pow2(i32::from(bits) - 127) }
}

/// `x` as FLOAT8E8M0 (an exponent only, 2^-127 ..= 2^127).
///
/// The spec leaves negative inputs unspecified; their magnitude is converted, as the ONNX
/// reference implementation does. NaN gives NaN. With `saturate`, infinities, values that round
/// past 2^127 and values that round below 2^-127 (including zero) clamp to the nearer end;
/// without it they give NaN (the spec's table for the two common cases).
pub(super) fn e8m0_encode(x: f64, saturate: bool, mode: RoundMode) -> u8 {
    if x.is_nan() {
        return E8M0_NAN;
    }
    let a = x.abs();
    let clamp = |high: bool| match (saturate, high) {
        (false, _) => E8M0_NAN,
        (true, true) => E8M0_MAX,
        (true, false) => 0,
    };
    if a.is_infinite() {
        return clamp(true);
    }
    if a == 0.0 {
        return clamp(false);
    }
    let bits = a.to_bits();
    let frac = bits & ((1u64 << 52) - 1);
    let e = floor_log2(a);
    let up = match mode {
        RoundMode::Down => false,
        RoundMode::Up => frac != 0,
        // a >= 1.5 * 2^e: the top fraction bit.
        RoundMode::Nearest => frac >> 51 == 1,
    };
    let code = e + 127 + i32::from(up);
    if code > i32::from(E8M0_MAX) {
        clamp(true)
    } else if code < 0 {
        clamp(false)
    } else {
        code as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formats under test: the codec, its name, the spec's largest value and whether the
    /// format has infinities / NaN / negative zero.
    const ALL: [(MiniFloat, &str, f64); 7] = [
        (E4M3FN, "e4m3fn", 448.0),
        (E4M3FNUZ, "e4m3fnuz", 240.0),
        (E5M2, "e5m2", 57344.0),
        (E5M2FNUZ, "e5m2fnuz", 57344.0),
        (E2M1, "e2m1", 6.0),
        (E2M3, "e2m3", 7.5),
        (E3M2, "e3m2", 28.0),
    ];

    /// The value of `bits` read straight from the format definition (sign, biased exponent,
    /// mantissa with an implicit leading 1 unless the exponent is 0), written independently of
    /// the codec: `None` for a NaN code.
    fn reference(name: &str, bits: u8) -> Option<f64> {
        let (e_bits, m_bits, bias): (u32, u32, i32) = match name {
            "e4m3fn" => (4, 3, 7),
            "e4m3fnuz" => (4, 3, 8),
            "e5m2" => (5, 2, 15),
            "e5m2fnuz" => (5, 2, 16),
            "e2m1" => (2, 1, 1),
            "e2m3" => (2, 3, 1),
            _ => (3, 2, 2 + 1),
        };
        let width = 1 + e_bits + m_bits;
        let bits = u32::from(bits) & ((1 << width) - 1);
        let s = bits >> (width - 1);
        let e = (bits >> m_bits) & ((1 << e_bits) - 1);
        let m = bits & ((1 << m_bits) - 1);
        let e_max = (1 << e_bits) - 1;
        match name {
            "e4m3fn" if e == e_max && m == (1 << m_bits) - 1 => return None,
            "e4m3fnuz" | "e5m2fnuz" if s == 1 && e == 0 && m == 0 => return None,
            "e5m2" if e == e_max && m != 0 => return None,
            "e5m2" if e == e_max => return Some(if s == 1 { f64::NEG_INFINITY } else { f64::INFINITY }),
            _ => {}
        }
        let frac = f64::from(m) / f64::from(1u32 << m_bits);
        let v = if e == 0 { frac * 2f64.powi(1 - bias) } else { (1.0 + frac) * 2f64.powi(e as i32 - bias) };
        Some(if s == 1 { -v } else { v })
    }

    fn codes(width: u32) -> impl Iterator<Item = u8> {
        (0..1u16 << width).map(|b| b as u8)
    }

    fn width(f: MiniFloat) -> u32 {
        1 + f.exp_bits + f.man_bits
    }

    #[test]
    fn decode_matches_the_format_definition_for_every_code() {
        for (f, name, max) in ALL {
            let mut seen_max = f64::MIN;
            for b in codes(width(f)) {
                let got = f.decode(b);
                match reference(name, b) {
                    None => assert!(got.is_nan(), "{name} {b:#04x} should be NaN, got {got}"),
                    Some(want) => {
                        assert_eq!(got.to_bits(), want.to_bits(), "{name} {b:#04x}");
                        if want.is_finite() {
                            seen_max = seen_max.max(want);
                        }
                    }
                }
            }
            assert_eq!(seen_max, max, "{name} largest value");
        }
    }

    #[test]
    fn every_code_round_trips_from_f64_f32_and_f16() {
        for (f, name, _) in ALL {
            for b in codes(width(f)) {
                let v = f.decode(b);
                if v.is_nan() {
                    assert!(f.decode(f.encode(v, true)).is_nan(), "{name} NaN {b:#04x}");
                    assert!(f.decode(f.encode(v, false)).is_nan() || f.special == Special::Finite);
                    continue;
                }
                for saturate in [true, false] {
                    let want = if v.is_infinite() && saturate { f.encode(v.signum() * 1e30, true) } else { b };
                    assert_eq!(f.encode(v, saturate), want, "{name} {b:#04x} = {v} saturate={saturate}");
                    assert_eq!(f.encode(f64::from(v as f32), saturate), want);
                    assert_eq!(f.encode(half::f16::from_f64(v).to_f64(), saturate), want);
                }
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even_between_every_pair_of_neighbours() {
        for (f, name, _) in ALL {
            // The finite non-negative values with their codes, ascending.
            let mut vals: Vec<(f64, u8)> = codes(width(f) - 1)
                .filter_map(|b| reference(name, b).filter(|v| v.is_finite()).map(|v| (v, b)))
                .collect();
            vals.sort_by(|a, b| a.0.total_cmp(&b.0));
            for w in vals.windows(2) {
                let ((lo, lo_b), (hi, hi_b)) = (w[0], w[1]);
                let mid = (lo + hi) / 2.0;
                let even = if lo_b % 2 == 0 { lo_b } else { hi_b };
                let next_up = f64::from_bits(mid.to_bits() + 1);
                let next_down = f64::from_bits(mid.to_bits() - 1);
                for saturate in [true, false] {
                    assert_eq!(f.encode(mid, saturate), even, "{name} tie {mid}");
                    assert_eq!(f.encode(next_up, saturate), hi_b, "{name} above {mid}");
                    assert_eq!(f.encode(next_down, saturate), lo_b, "{name} below {mid}");
                    // Negative values mirror positive ones (FNUZ has no -0).
                    let neg = f.encode(-next_down, saturate);
                    if lo_b == 0 && f.special == Special::Fnuz {
                        assert_eq!(neg, 0, "{name} -{next_down}");
                    } else {
                        assert_eq!(neg, lo_b | f.sign_bit(), "{name} -{next_down}");
                    }
                }
            }
        }
    }

    /// The Cast spec tables: `(saturated, not saturated)` codes for +x and -x.
    fn table(f: MiniFloat, x: f64) -> (u8, u8) {
        (f.encode(x, true), f.encode(x, false))
    }

    #[test]
    fn special_values_follow_the_cast_spec_tables() {
        let inf = f64::INFINITY;
        let big = 1e6;
        // E4M3FN: no inf; out of range is NaN (sign kept) unless saturating.
        for x in [inf, big, 480.0, 465.0] {
            assert_eq!(table(E4M3FN, x), (0x7E, 0x7F), "e4m3fn {x}");
            assert_eq!(table(E4M3FN, -x), (0xFE, 0xFF), "e4m3fn -{x}");
        }
        // 464 is the tie between 448 (even) and the NaN code: it stays 448.
        assert_eq!(table(E4M3FN, 464.0), (0x7E, 0x7E));
        // E4M3FNUZ: NaN is 0x80 whatever the sign.
        for x in [inf, big, 248.0, -inf, -big] {
            assert_eq!(table(E4M3FNUZ, x).1, 0x80, "e4m3fnuz {x}");
        }
        assert_eq!(table(E4M3FNUZ, inf).0, 0x7F);
        assert_eq!(table(E4M3FNUZ, -inf).0, 0xFF);
        // E5M2: IEEE infinities when not saturating.
        assert_eq!(table(E5M2, inf), (0x7B, 0x7C));
        assert_eq!(table(E5M2, -inf), (0xFB, 0xFC));
        assert_eq!(table(E5M2, 61440.0), (0x7B, 0x7C));
        assert_eq!(table(E5M2, 61439.0), (0x7B, 0x7B));
        // E5M2FNUZ.
        assert_eq!(table(E5M2FNUZ, inf), (0x7F, 0x80));
        assert_eq!(table(E5M2FNUZ, -big), (0xFF, 0x80));
        // Zeros: FNUZ has no negative zero.
        for (f, neg_zero) in [(E4M3FN, 0x80), (E4M3FNUZ, 0), (E5M2, 0x80), (E5M2FNUZ, 0), (E2M1, 0x8)] {
            assert_eq!(table(f, 0.0), (0, 0));
            assert_eq!(table(f, -0.0), (neg_zero, neg_zero));
            // A negative value rounding to zero is -0 too (or 0 in FNUZ).
            assert_eq!(table(f, -1e-30), (neg_zero, neg_zero));
        }
        // NaN: sign kept where the format has signed NaNs.
        assert_eq!(table(E4M3FN, f64::NAN), (0x7F, 0x7F));
        assert_eq!(table(E4M3FN, -f64::NAN), (0xFF, 0xFF));
        assert_eq!(table(E5M2, f64::NAN), (0x7E, 0x7E));
        assert_eq!(table(E5M2, -f64::NAN), (0xFE, 0xFE));
        assert_eq!(table(E4M3FNUZ, -f64::NAN), (0x80, 0x80));
        assert_eq!(table(E5M2FNUZ, f64::NAN), (0x80, 0x80));
        // The 4- and 6-bit formats always saturate, and have no NaN.
        assert_eq!(table(E2M1, inf), (0x7, 0x7));
        assert_eq!(table(E2M1, -big), (0xF, 0xF));
        assert_eq!(table(E2M3, inf), (0x1F, 0x1F));
        assert_eq!(table(E3M2, -inf), (0x3F, 0x3F));
    }

    #[test]
    fn values_from_the_reference_test_data() {
        // Codes the ONNX reference (ml_dtypes) gives for the Cast node tests' inputs.
        let x = 0.47892547f32 as f64;
        assert_eq!(E4M3FN.encode(x, true), 0x2F);
        assert_eq!(E4M3FNUZ.encode(x, true), 0x37);
        assert_eq!(E5M2.encode(x, true), 0x38);
        assert_eq!(E5M2FNUZ.encode(x, true), 0x3C);
        assert_eq!(E4M3FN.encode(300.0, false), 0x79);
        assert_eq!(E5M2.encode(470.0, false), 0x5F);
        assert_eq!(E5M2FNUZ.encode(248.0, false), 0x60);
        assert_eq!(E4M3FN.encode(0.0009765625 * 1.5, true), 0x01);
        assert_eq!(E4M3FN.encode(-1e-7, true), 0x80);
        let f4 = [(0.48, 0x1), (0.25, 0x0), (1.05, 0x2), (-3.5, 0xE), (-8.0, 0xF), (9.0, 0x7), (-4.0, 0xE)];
        for (x, want) in f4 {
            assert_eq!(E2M1.encode(f64::from(x as f32), true), want, "e2m1 {x}");
        }
        // ml_dtypes turns NaN into a zero of the opposite sign.
        assert_eq!(E2M1.encode(f64::NAN, true), 0x8);
        assert_eq!(E2M1.encode(-f64::NAN, true), 0x0);
    }

    #[test]
    fn e8m0_rounding_modes_and_specials() {
        use RoundMode::*;
        for b in 0..=254u8 {
            let v = e8m0_decode(b);
            assert_eq!(v, 2f64.powi(i32::from(b) - 127));
            for mode in [Up, Down, Nearest] {
                assert_eq!(e8m0_encode(v, true, mode), b);
                assert_eq!(e8m0_encode(v, false, mode), b);
            }
        }
        assert!(e8m0_decode(0xFF).is_nan());
        // Between 2 (code 128) and 4 (129).
        for (x, up, down, nearest) in [(2.5, 129, 128, 128), (3.0, 129, 128, 129), (3.9, 129, 128, 129)] {
            assert_eq!(e8m0_encode(x, true, Up), up, "{x}");
            assert_eq!(e8m0_encode(x, true, Down), down, "{x}");
            assert_eq!(e8m0_encode(x, true, Nearest), nearest, "{x}");
        }
        // The spec table: saturate + up, and non-saturate + nearest.
        assert_eq!(e8m0_encode(0.0, true, Up), 0);
        assert_eq!(e8m0_encode(0.0, false, Nearest), 0xFF);
        assert_eq!(e8m0_encode(f64::NAN, true, Up), 0xFF);
        assert_eq!(e8m0_encode(f64::INFINITY, true, Up), 0xFE);
        assert_eq!(e8m0_encode(f64::INFINITY, false, Nearest), 0xFF);
        assert_eq!(e8m0_encode(3e38, true, Up), 0xFE);
        assert_eq!(e8m0_encode(3e38, false, Up), 0xFF);
        assert_eq!(e8m0_encode(1e-45, true, Up), 0);
        assert_eq!(e8m0_encode(1e-45, false, Nearest), 0xFF);
        // The Cast-24 node test: [0, 0.124, 0.25, 0.5, 1.1, 2, 4, 8] with the defaults.
        let got: Vec<u8> =
            [0.0, 0.124f32 as f64, 0.25, 0.5, 1.1f32 as f64, 2.0, 4.0, 8.0].map(|x| e8m0_encode(x, true, Up)).to_vec();
        assert_eq!(got, [0, 124, 125, 126, 128, 128, 129, 130]);
    }
}
