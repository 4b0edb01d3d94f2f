//! Element types of ONNX tensors.

use half::{bf16, f16};

/// The element type of a tensor, numbered as ONNX's `TensorProto.DataType`.
///
/// Sub-byte types (`Int4`, `Uint4`, `Int2`, `Uint2`, `Float4E2M1`) are stored unpacked, one
/// element per byte, so kernels index them like `i8`/`u8`; the loader unpacks them. The 8-bit
/// float formats are stored as their raw byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
#[allow(missing_docs)]
pub enum DType {
    F32 = 1,
    U8 = 2,
    I8 = 3,
    U16 = 4,
    I16 = 5,
    I32 = 6,
    I64 = 7,
    String = 8,
    Bool = 9,
    F16 = 10,
    F64 = 11,
    U32 = 12,
    U64 = 13,
    Complex64 = 14,
    Complex128 = 15,
    BF16 = 16,
    F8E4M3FN = 17,
    F8E4M3FNUZ = 18,
    F8E5M2 = 19,
    F8E5M2FNUZ = 20,
    U4 = 21,
    I4 = 22,
    F4E2M1 = 23,
    F8E8M0 = 24,
    U2 = 25,
    I2 = 26,
    F6E2M3 = 27,
    F6E3M2 = 28,
}

impl DType {
    /// All element types, in ONNX numbering order.
    pub const ALL: [DType; 28] = [
        DType::F32,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::String,
        DType::Bool,
        DType::F16,
        DType::F64,
        DType::U32,
        DType::U64,
        DType::Complex64,
        DType::Complex128,
        DType::BF16,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::U4,
        DType::I4,
        DType::F4E2M1,
        DType::F8E8M0,
        DType::U2,
        DType::I2,
        DType::F6E2M3,
        DType::F6E3M2,
    ];

    /// The type for an ONNX `TensorProto.DataType` number, if it names one.
    pub fn from_onnx(code: i32) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| *d as i32 == code)
    }

    /// The ONNX `TensorProto.DataType` number.
    pub fn onnx_code(self) -> i32 {
        self as i32
    }

    /// Bytes one element takes in memory here (sub-byte types are unpacked: 1).
    /// Strings are not stored as bytes; this returns 0 for them.
    pub fn size(self) -> usize {
        use DType::*;
        match self {
            String => 0,
            Bool | U8 | I8 | F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | U4 | I4 | F4E2M1 | F8E8M0 | U2 | I2
            | F6E2M3 | F6E3M2 => 1,
            U16 | I16 | F16 | BF16 => 2,
            F32 | I32 | U32 => 4,
            F64 | I64 | U64 | Complex64 => 8,
            Complex128 => 16,
        }
    }

    /// How many bits one element takes in ONNX's packed `raw_data` encoding.
    pub fn packed_bits(self) -> usize {
        use DType::*;
        match self {
            U4 | I4 | F4E2M1 => 4,
            U2 | I2 => 2,
            _ => self.size() * 8,
        }
    }

    /// The ONNX spelling (`tensor(float)` uses `float`).
    pub fn onnx_name(self) -> &'static str {
        use DType::*;
        match self {
            F32 => "float",
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            String => "string",
            Bool => "bool",
            F16 => "float16",
            F64 => "double",
            U32 => "uint32",
            U64 => "uint64",
            Complex64 => "complex64",
            Complex128 => "complex128",
            BF16 => "bfloat16",
            F8E4M3FN => "float8e4m3fn",
            F8E4M3FNUZ => "float8e4m3fnuz",
            F8E5M2 => "float8e5m2",
            F8E5M2FNUZ => "float8e5m2fnuz",
            U4 => "uint4",
            I4 => "int4",
            F4E2M1 => "float4e2m1",
            F8E8M0 => "float8e8m0",
            U2 => "uint2",
            I2 => "int2",
            F6E2M3 => "float6e2m3",
            F6E3M2 => "float6e3m2",
        }
    }

    /// True for f16, bf16, f32, f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the signed and unsigned integer types of 8 bits or more.
    pub fn is_int(self) -> bool {
        use DType::*;
        matches!(self, U8 | I8 | U16 | I16 | I32 | I64 | U32 | U64)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.onnx_name())
    }
}

/// A Rust type that is the in-memory element of a [`DType`].
///
/// # Safety
/// Implementors must be plain data of exactly `DTYPE.size()` bytes with alignment no larger
/// than 64, for which every bit pattern produced by [`crate::Tensor`] constructors is valid.
/// (`bool` qualifies because every constructor that takes foreign bytes checks them.)
pub unsafe trait Elem: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug + 'static {
    /// The matching element type.
    const DTYPE: DType;
}

macro_rules! elem {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        // SAFETY: a primitive plain-data type whose size matches `DType::size`.
        unsafe impl Elem for $t { const DTYPE: DType = DType::$d; }
    )*};
}
elem!(f32 => F32, f64 => F64, f16 => F16, bf16 => BF16, i8 => I8, i16 => I16, i32 => I32,
      i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, bool => Bool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_sizes_match_rust_types() {
        for d in DType::ALL {
            assert_eq!(DType::from_onnx(d.onnx_code()), Some(d));
        }
        assert_eq!(DType::from_onnx(0), None);
        assert_eq!(DType::from_onnx(99), None);
        assert_eq!(DType::F16.size(), std::mem::size_of::<f16>());
        assert_eq!(DType::BF16.size(), std::mem::size_of::<bf16>());
        assert_eq!(DType::I64.size(), std::mem::size_of::<i64>());
        assert_eq!(DType::I4.packed_bits(), 4);
    }
}
