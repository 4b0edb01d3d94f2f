//! The narrow integer types of [Cast](https://onnx.ai/onnx/operators/onnx__Cast.html): INT4 and
//! UINT4 (Cast-21) and INT2 and UINT2 (Cast-25), stored unpacked one per byte (signed ones
//! sign-extended in an `i8`, unsigned ones in the low bits of a `u8`).
//!
//! Integers that do not fit keep their low bits (two's complement), the spec's rule for fixed
//! point to fixed point. The spec leaves float to integer out of range undefined; here a float
//! truncates toward zero and then keeps its low bits, and NaN and infinities give 0, which is
//! what the ONNX reference implementation (ml_dtypes) produces for its test data.

/// A narrow integer format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NarrowInt {
    bits: u32,
    signed: bool,
}

pub(super) const I4: NarrowInt = NarrowInt { bits: 4, signed: true };
pub(super) const U4: NarrowInt = NarrowInt { bits: 4, signed: false };
pub(super) const I2: NarrowInt = NarrowInt { bits: 2, signed: true };
pub(super) const U2: NarrowInt = NarrowInt { bits: 2, signed: false };

impl NarrowInt {
    /// The value stored in a byte (only the low `bits` bits are read).
    pub(super) fn decode(self, byte: u8) -> i128 {
        let mask = (1u8 << self.bits) - 1;
        let v = byte & mask;
        if self.signed && v & (1 << (self.bits - 1)) != 0 {
            i128::from(v) - (1i128 << self.bits)
        } else {
            i128::from(v)
        }
    }

    /// The storage byte of `i` reduced to this width (signed formats sign-extend into the byte).
    pub(super) fn wrap(self, i: i128) -> u8 {
        let mask = (1i128 << self.bits) - 1;
        let low = i & mask;
        let v = if self.signed && low >> (self.bits - 1) != 0 { low - (1i128 << self.bits) } else { low };
        // `v` fits in i8 (signed) or u8 (unsigned); the byte is its two's complement.
        v as i8 as u8
    }

    /// `f` truncated toward zero and wrapped; NaN and infinities give 0.
    pub(super) fn wrap_float(self, f: f64) -> u8 {
        if f.is_finite() { self.wrap(f.trunc() as i128) } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int4_and_int2_edges_wrap() {
        for (i, want) in [(-9, 7), (-8, -8), (-1, -1), (0, 0), (7, 7), (8, -8), (15, -1), (16, 0), (200, -8)] {
            assert_eq!(I4.decode(I4.wrap(i)), want, "int4 {i}");
        }
        for (i, want) in [(-9, 7), (-1, 15), (0, 0), (15, 15), (16, 0), (17, 1)] {
            assert_eq!(U4.decode(U4.wrap(i)), want, "uint4 {i}");
        }
        for (i, want) in [(-3, 1), (-2, -2), (1, 1), (2, -2), (3, -1)] {
            assert_eq!(I2.decode(I2.wrap(i)), want, "int2 {i}");
        }
        for (i, want) in [(-3, 1), (-1, 3), (3, 3), (4, 0)] {
            assert_eq!(U2.decode(U2.wrap(i)), want, "uint2 {i}");
        }
        // Signed values are stored sign-extended, as the loader unpacks them.
        assert_eq!(I4.wrap(-8), 0xF8);
        assert_eq!(U4.wrap(-1), 0x0F);
        assert_eq!(I4.decode(0xF8), -8);
    }

    #[test]
    fn floats_truncate_then_wrap() {
        // Values from the reference implementation (ml_dtypes astype).
        for (f, want) in [(1.5, 1), (2.5, 2), (-2.5, -2), (7.6, 7), (9.0, -7), (-9.0, 7), (300.0, -4)] {
            assert_eq!(I4.decode(I4.wrap_float(f)), want, "int4 {f}");
        }
        assert_eq!(U4.decode(U4.wrap_float(-2.5)), 14);
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(I4.wrap_float(f), 0);
            assert_eq!(U2.wrap_float(f), 0);
        }
    }
}
