//! Conversions between f32 and the small float formats ONNX quantizes to: the four
//! [float8 types](https://onnx.ai/onnx/technical/float8.html) (E4M3FN, E4M3FNUZ, E5M2,
//! E5M2FNUZ), [float4 E2M1](https://onnx.ai/onnx/technical/float4.html), the two float6
//! formats (E2M3, E3M2) and the power-of-two scale type float8 E8M0.
//!
//! Encoding rounds to nearest, ties to even. Out-of-range values follow the saturation table of
//! [Cast](https://onnx.ai/onnx/operators/onnx__Cast.html): with `saturate`, ±Inf and values
//! beyond the largest finite magnitude become ±max; without it they become NaN (or ±Inf for
//! E5M2, the one format with infinities). Formats without NaN/Inf encodings (float4, float6)
//! always saturate. Kept here, independent of the Cast kernel, so the two can evolve separately.

use vinort_ir::DType;

/// Layout and special values of a small float format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Format {
    /// Exponent bits.
    exp: u32,
    /// Mantissa bits.
    man: u32,
    /// Exponent bias.
    bias: i32,
    /// Special-value convention.
    kind: Kind,
    /// Largest finite magnitude.
    max: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// E4M3FN: the all-ones pattern (exponent and mantissa) is NaN; no infinities.
    Fn,
    /// FNUZ: the negative-zero pattern is the only NaN; no infinities, no negative zero.
    Fnuz,
    /// E5M2: IEEE-like, the all-ones exponent holds Inf (mantissa 0) and NaN.
    Ieee,
    /// float4/float6: every pattern is a finite number.
    Finite,
}

pub(crate) const E4M3FN: Format = Format { exp: 4, man: 3, bias: 7, kind: Kind::Fn, max: 448.0 };
pub(crate) const E4M3FNUZ: Format = Format { exp: 4, man: 3, bias: 8, kind: Kind::Fnuz, max: 240.0 };
pub(crate) const E5M2: Format = Format { exp: 5, man: 2, bias: 15, kind: Kind::Ieee, max: 57344.0 };
pub(crate) const E5M2FNUZ: Format = Format { exp: 5, man: 2, bias: 16, kind: Kind::Fnuz, max: 57344.0 };
pub(crate) const E2M1: Format = Format { exp: 2, man: 1, bias: 1, kind: Kind::Finite, max: 6.0 };
pub(crate) const E2M3: Format = Format { exp: 2, man: 3, bias: 1, kind: Kind::Finite, max: 7.5 };
pub(crate) const E3M2: Format = Format { exp: 3, man: 2, bias: 3, kind: Kind::Finite, max: 28.0 };

/// The small float format of an element type, if it is one (E8M0 is handled separately).
pub(crate) fn format_of(d: DType) -> Option<Format> {
    Some(match d {
        DType::F8E4M3FN => E4M3FN,
        DType::F8E4M3FNUZ => E4M3FNUZ,
        DType::F8E5M2 => E5M2,
        DType::F8E5M2FNUZ => E5M2FNUZ,
        DType::F4E2M1 => E2M1,
        DType::F6E2M3 => E2M3,
        DType::F6E3M2 => E3M2,
        _ => return None,
    })
}

impl Format {
    fn sign_bit(self) -> u8 {
        1u8 << (self.exp + self.man)
    }

    fn nan(self, negative: bool) -> u8 {
        let s = if negative { self.sign_bit() } else { 0 };
        match self.kind {
            Kind::Fn => s | (self.sign_bit() - 1),
            Kind::Ieee => s | (self.sign_bit() - 1 - 1),
            Kind::Fnuz => self.sign_bit(),
            // No NaN encoding: the largest magnitude is the closest thing.
            Kind::Finite => self.encode_abs(self.max),
        }
    }

    /// Encodes a magnitude that is already representable exactly (0 ≤ a ≤ max).
    fn encode_abs(self, a: f32) -> u8 {
        if a == 0.0 {
            return 0;
        }
        let a = a as f64;
        let emin = 1 - self.bias;
        let e = (a.log2().floor() as i32).max(emin);
        // log2 of a value just below a power of two may round up; correct the estimate.
        let e = if a < 2f64.powi(e) && e > emin { e - 1 } else { e };
        let m = a / 2f64.powi(e - self.man as i32);
        let field = if a < 2f64.powi(emin) { 0 } else { e + self.bias };
        let frac = if field == 0 { m as u32 } else { (m as u32) - (1 << self.man) };
        ((field as u32) << self.man | frac) as u8
    }

    /// Encodes `x`, rounding to nearest even; see the module doc for out-of-range values.
    pub(crate) fn encode(self, x: f32, saturate: bool) -> u8 {
        let neg = x.is_sign_negative();
        let sign = if neg { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return self.nan(neg);
        }
        let saturate = saturate || self.kind == Kind::Finite;
        let a = x.abs();
        let r = if a.is_infinite() { f64::INFINITY } else { self.round_abs(a as f64) };
        if r > self.max as f64 {
            if saturate {
                return sign | self.encode_abs(self.max);
            }
            return match self.kind {
                Kind::Ieee => sign | ((1u8 << self.exp) - 1) << self.man,
                _ => self.nan(neg),
            };
        }
        let bits = self.encode_abs(r as f32);
        if bits == 0 && self.kind == Kind::Fnuz {
            return 0;
        }
        sign | bits
    }

    /// `a` (finite, non-negative) rounded to this format's precision with an unbounded
    /// exponent range above (so overflow shows as a value above `max`).
    fn round_abs(self, a: f64) -> f64 {
        if a == 0.0 {
            return 0.0;
        }
        let emin = 1 - self.bias;
        let mut e = (a.log2().floor() as i32).max(emin);
        if a < 2f64.powi(e) && e > emin {
            e -= 1;
        }
        let quantum = 2f64.powi(e - self.man as i32);
        (a / quantum).round_ties_even() * quantum
    }

    /// Decodes a bit pattern.
    pub(crate) fn decode(self, bits: u8) -> f32 {
        let width = 1 + self.exp + self.man;
        let bits = if width < 8 { bits & ((1u8 << width) - 1) } else { bits };
        let neg = bits & self.sign_bit() != 0;
        let field = ((bits >> self.man) & ((1u8 << self.exp) - 1)) as i32;
        let frac = (bits & ((1u8 << self.man) - 1)) as i32;
        let all_ones = (1i32 << self.exp) - 1;
        match self.kind {
            Kind::Fn if field == all_ones && frac == (1 << self.man) - 1 => return f32::NAN,
            Kind::Ieee if field == all_ones => {
                return if frac != 0 {
                    f32::NAN
                } else if neg {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                };
            }
            Kind::Fnuz if bits == self.sign_bit() => return f32::NAN,
            _ => {}
        }
        let v = if field == 0 {
            frac as f64 * 2f64.powi(1 - self.bias - self.man as i32)
        } else {
            (1.0 + frac as f64 / (1u32 << self.man) as f64) * 2f64.powi(field - self.bias)
        };
        (if neg { -v } else { v }) as f32
    }
}

/// Decodes a float8 E8M0 scale: 2^(bits - 127), with 0xFF as NaN.
pub(crate) fn decode_e8m0(bits: u8) -> f32 {
    if bits == 0xff { f32::NAN } else { 2f32.powi(bits as i32 - 127) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        assert_eq!(E4M3FN.encode(448.0, true), 0x7e);
        assert_eq!(E4M3FN.encode(1000.0, true), 0x7e);
        assert_eq!(E4M3FN.encode(1000.0, false), 0x7f);
        assert_eq!(E4M3FN.encode(-1000.0, false), 0xff);
        assert_eq!(E4M3FN.encode(1.0, true), 0x38);
        assert_eq!(E4M3FN.encode(-0.0, true), 0x80);
        assert_eq!(E4M3FN.encode(2f32.powi(-9), true), 0x01);
        // Halfway between 0 and the smallest subnormal rounds to even (0).
        assert_eq!(E4M3FN.encode(2f32.powi(-10), true), 0x00);
        assert_eq!(E4M3FNUZ.encode(-0.0, true), 0x00);
        assert_eq!(E4M3FNUZ.encode(-1e-9, true), 0x00);
        assert_eq!(E4M3FNUZ.encode(-1.0, true), 0xc0);
        assert_eq!(E4M3FNUZ.encode(240.0, true), 0x7f);
        assert_eq!(E4M3FNUZ.encode(f32::INFINITY, false), 0x80);
        assert_eq!(E5M2.encode(f32::INFINITY, false), 0x7c);
        assert_eq!(E5M2.encode(f32::NEG_INFINITY, true), 0xfb);
        assert_eq!(E5M2.encode(1e6, false), 0x7c);
        assert_eq!(E5M2FNUZ.encode(57344.0, true), 0x7f);
        assert_eq!(E2M1.encode(6.0, true), 0x7);
        assert_eq!(E2M1.encode(100.0, false), 0x7);
        assert_eq!(E2M1.encode(-0.5, true), 0x9);
        assert_eq!(E2M1.encode(2.5, true), 0x4); // tie between 2 and 3 goes to 2
        assert_eq!(E2M1.encode(3.5, true), 0x6); // tie between 3 and 4 goes to 4
    }

    #[test]
    fn every_pattern_round_trips() {
        for f in [E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E2M1, E2M3, E3M2] {
            let n = 1u16 << (1 + f.exp + f.man);
            for b in 0..n {
                let b = b as u8;
                let v = f.decode(b);
                if v.is_nan() || v.is_infinite() {
                    continue;
                }
                let back = f.encode(v, false);
                assert_eq!(f.decode(back), v, "{f:?} {b:#x}");
                if v != 0.0 {
                    assert_eq!(back, b, "{f:?} {b:#x} -> {v}");
                }
            }
        }
        assert_eq!(decode_e8m0(127), 1.0);
        assert_eq!(decode_e8m0(128), 2.0);
        assert!(decode_e8m0(0xff).is_nan());
    }
}
