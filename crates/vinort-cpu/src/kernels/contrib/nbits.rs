//! ONNX Runtime's [MatMulNBits](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.MatMulNBits)
//! (`com.microsoft`, opset 1): `Y = A @ dequant(B)ᵀ (+ bias)`, B block-quantized along K.
//!
//! - A: float (f32, f16, bf16, f64) `[..., K]`; Y: A's type, `[..., N]`.
//! - B: uint8, `N · k_blocks · blob_size` bytes (`[N, k_blocks, blob_size]`), `k_blocks =
//!   ceil(K / block_size)`, `blob_size = block_size · bits / 8`; codes packed along K first
//!   code in the low bits, `bits` ∈ {2, 4, 8}. Codes past K in the last block are padding.
//! - scales: A's type, `N · k_blocks` elements (`[N · k_blocks]` or `[N, k_blocks]`).
//! - zero_points (optional): uint8 packed like B, `ceil(k_blocks · bits / 8)` bytes per
//!   row of N; or A's type, one per scale (GPTQ-style float zero points). Default `2^(bits-1)`.
//! - g_idx (optional, int32 `[K]`): the scale group of each row k of B, instead of
//!   `k / block_size` (act-order GPTQ). With g_idx and packed 4-bit zero points, ONNX
//!   Runtime's CPU kernel (1.31) uses the default zero point 8 and ignores the packed ones;
//!   vinort does the same, so its outputs match. (For 2- and 8-bit codes ONNX Runtime fails or
//!   mis-reads g_idx; vinort applies it as documented.)
//! - bias (optional): A's type, `[N]`.
//!
//! Weights dequantize as `(code - zero_point) · scale` in f32 and the product is an f32 gemm,
//! as ONNX Runtime's CPU kernel does with `accuracy_level` unset (its fp32 compute type);
//! f16/bf16 A is widened, so Y rounds once. `accuracy_level` 4 makes ONNX Runtime quantize A
//! to int8 per block at run time; vinort keeps the f32 product for every level, which differs
//! from that path by A's int8 quantization error (measured with onnxruntime 1.31, K=256, block
//! 32: up to about 0.5% of max |Y| for 2-, 4- and 8-bit B; the level-0 path agrees to ~1e-6).

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{FLOATS, check_types, same_type};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::dense::{View, matmul_into};
use crate::kernels::quant::{load_f32, store_float};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "MatMulNBits", factory);
}

/// MatMulNBits' attributes, checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NBits {
    k: usize,
    n: usize,
    bits: usize,
    block: usize,
}

impl NBits {
    /// Validates the attributes as ONNX Runtime's kernel does.
    pub(crate) fn new(k: i64, n: i64, bits: i64, block: i64) -> Result<NBits> {
        if !matches!(bits, 2 | 4 | 8) {
            return Err(Error::unsupported(format!("MatMulNBits with bits={bits} (2, 4 or 8 are supported)")));
        }
        if block < 16 || block.count_ones() != 1 {
            return Err(Error::invalid(format!("block_size {block} must be a power of 2 and at least 16")));
        }
        let pos = |v: i64, what: &str| {
            usize::try_from(v).map_err(|_| Error::invalid(format!("{what} must not be negative, got {v}")))
        };
        Ok(NBits { k: pos(k, "K")?, n: pos(n, "N")?, bits: bits as usize, block: block as usize })
    }

    fn k_blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }

    /// B dequantized to f32, row-major `[N, K]`.
    pub(crate) fn dequantize(
        &self,
        b: &Tensor,
        scales: &Tensor,
        zp: Option<&Tensor>,
        g_idx: Option<&Tensor>,
    ) -> Result<Vec<f32>> {
        let (k, n, bits, kb) = (self.k, self.n, self.bits, self.k_blocks());
        let blob = self.block * bits / 8;
        let want = n.checked_mul(kb).and_then(|v| v.checked_mul(blob));
        if b.dtype() != DType::U8 || Some(b.len()) != want {
            return Err(Error::invalid(format!(
                "B must be uint8 [N={n}, k_blocks={kb}, blob_size={blob}], got {} {:?}",
                b.dtype(),
                b.shape()
            )));
        }
        expect_len(scales, n * kb, "scales must have N·k_blocks")?;
        let bv = b.as_slice::<u8>()?;
        let sc = load_f32(scales)?;
        let per = 8 / bits;
        let mask = ((1u16 << bits) - 1) as u8;
        let code = |bytes: &[u8], i: usize| (bytes[i / per] >> ((i % per) * bits)) & mask;
        // Zero point of (row n, group g), as f32.
        let zp_row = kb.div_ceil(per);
        // ONNX Runtime's CPU kernel (1.31) ignores packed 4-bit zero points when g_idx is given
        // (its reordering dequantizer reads only the default 8); float zero points it applies.
        let zp = zp.filter(|z| !(g_idx.is_some() && bits == 4 && z.dtype() == DType::U8));
        let zps: Vec<f32> = match zp {
            None => vec![(1u32 << (bits - 1)) as f32; n * kb],
            Some(z) if z.dtype() == DType::U8 => {
                expect_len(z, n * zp_row, "packed zero_points must have N·ceil(k_blocks·bits/8)")?;
                let zv = z.as_slice::<u8>()?;
                (0..n * kb).map(|i| code(&zv[(i / kb) * zp_row..], i % kb) as f32).collect()
            }
            Some(z) => {
                same_type(scales, z, "zero_points")?;
                expect_len(z, n * kb, "float zero_points must have N·k_blocks")?;
                load_f32(z)?
            }
        };
        let groups: Vec<usize> = match g_idx {
            None => (0..k).map(|i| i / self.block).collect(),
            Some(g) => {
                if g.len() != k || !matches!(g.dtype(), DType::I32 | DType::I64) {
                    return Err(Error::invalid(format!(
                        "g_idx must be int32 [K={k}], got {} {:?}",
                        g.dtype(),
                        g.shape()
                    )));
                }
                g.to_i64_vec()?
                    .into_iter()
                    .map(|v| {
                        usize::try_from(v)
                            .ok()
                            .filter(|v| *v < kb)
                            .ok_or_else(|| Error::invalid(format!("g_idx value {v} is outside [0, {kb})")))
                    })
                    .collect::<Result<_>>()?
            }
        };
        let mut out = vec![0f32; n * k];
        let row_bytes = kb * blob;
        for (r, row) in out.chunks_mut(k.max(1)).enumerate().take(n) {
            let bytes = &bv[r * row_bytes..(r + 1) * row_bytes];
            for (i, o) in row.iter_mut().enumerate() {
                let p = r * kb + groups[i];
                *o = (code(bytes, i) as f32 - zps[p]) * sc[p];
            }
        }
        Ok(out)
    }
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 2, 5], &FLOATS)?;
    check_types(info, &[1], &[DType::U8])?;
    check_types(info, &[4], &[DType::I32])?;
    let q = NBits::new(
        n.req_attr::<i64>("K")?,
        n.req_attr::<i64>("N")?,
        n.attr_or::<i64>("bits", 4)?,
        n.req_attr::<i64>("block_size")?,
    )
    .map_err(|e| n.error(e.to_string()))?;
    Ok(Box::new(q))
}

impl Kernel for NBits {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        let scales = tensor_in(inputs, 2)?;
        let zp = opt_tensor_in(inputs, 3)?;
        let g_idx = opt_tensor_in(inputs, 4)?;
        let bias = opt_tensor_in(inputs, 5)?;
        if !FLOATS.contains(&a.dtype()) {
            return Err(Error::unsupported(format!("MatMulNBits A of type {}", a.dtype())));
        }
        same_type(a, scales, "scales")?;
        let (k, n) = (self.k, self.n);
        if a.shape().last() != Some(&k) {
            return Err(Error::invalid(format!("A {:?} must end in K={k}", a.shape())));
        }
        let w = self.dequantize(b, scales, zp, g_idx)?;
        let m = numel(&a.shape()[..a.rank() - 1]);
        let av = load_f32(a)?;
        let mut y = vec![0f32; m * n];
        matmul_into((m, n, k), View::rows(&av, k), View::rows(&w, k).t(), &mut y, n, false, 1.0, true)?;
        if let Some(bias) = bias {
            same_type(a, bias, "bias")?;
            if bias.len() != n {
                return Err(Error::invalid(format!("bias must be [N={n}], got {:?}", bias.shape())));
            }
            let bv = load_f32(bias)?;
            for row in y.chunks_mut(n.max(1)) {
                row.iter_mut().zip(&bv).for_each(|(y, b)| *y += b);
            }
        }
        let mut shape = a.shape().to_vec();
        *shape.last_mut().unwrap_or(&mut 0) = n;
        Ok(smallvec::smallvec![store_float(a.dtype(), &shape, &y)?.into()])
    }
}

/// `t` must hold `want` elements; `what` says which tensor and why (`… = want elements`).
fn expect_len(t: &Tensor, want: usize, what: &str) -> Result<()> {
    if t.len() == want {
        return Ok(());
    }
    Err(Error::invalid(format!("{what} = {want} elements, got {:?}", t.shape())))
}
