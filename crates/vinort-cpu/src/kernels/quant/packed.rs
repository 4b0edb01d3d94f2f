//! MatMulInteger and QLinearMatMul by a constant 2-D B (quantized weights, the usual case): B
//! is packed once, when the kernel is built, for [`crate::qgemm`] (AVX-512 VNNI, AVX2 or
//! portable; exact i32 with wrapping). A is read in place, every row of every batch as one tall
//! matrix. Shapes or zero points the packed path does not take (a per-row `a_zero_point` that
//! is not one per row of A, B of rank other than 2) fall back to the generic kernels in
//! [`super::qmatmul`], so a node never fails here that would run there.
//!
//! The graph optimizer also builds it with an [`Epilogue`]: MatMulInteger followed by a Cast to
//! float, a Mul by the scales (one, or one per column) and the usual bias / residual /
//! activation chain, computed as the unfused ops compute it (`acc as f32`, then `· scale`, ...)
//! while the block is in cache.

use smallvec::SmallVec;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, opt_tensor_in, tensor_in};
use crate::kernels::epilogue::{Epilogue, Operands};
use crate::qgemm::{Int8, PackedB, qgemm};

thread_local! {
    /// A fused product's i32 sums, kept per thread across runs.
    static ACC: std::cell::Cell<Vec<i32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A MatMulInteger whose B was packed at build time.
pub(crate) struct PackedMatMulInteger {
    b: PackedB,
    /// The generic kernel, for inputs the packed path does not take.
    fallback: Box<dyn Kernel>,
    /// Set when the optimizer fused a float tail: the output is f32.
    epi: Option<Epilogue>,
}

fn int8(t: &Tensor) -> Result<Int8<'_>> {
    match t.dtype() {
        DType::U8 => Ok(Int8::U8(t.as_slice::<u8>()?)),
        DType::I8 => Ok(Int8::I8(t.as_slice::<i8>()?)),
        d => Err(Error::unsupported(format!("integer matmul operand of type {d}"))),
    }
}

/// Zero points of `t` (absent: 0) as i32; one zero point is read in place (no allocation).
fn zero_points(t: Option<&Tensor>) -> Result<SmallVec<[i32; 4]>> {
    match t {
        None => Ok(smallvec::smallvec![0]),
        Some(t) if t.len() == 1 => Ok(smallvec::smallvec![super::one_i32(t)?]),
        Some(t) => super::load_i32(&t.to_aligned()).map(SmallVec::from_vec),
    }
}

/// B packed when it is a constant 2-D int8 tensor with a constant zero point of one element or
/// one per column; None otherwise.
fn pack_b(info: &NodeInfo<'_>) -> Result<Option<PackedB>> {
    let Some(b) = info.const_input(1) else { return Ok(None) };
    let &[k, n] = b.shape() else { return Ok(None) };
    let zb = match info.node.inputs.get(3).copied().flatten() {
        None => smallvec::smallvec![0],
        Some(_) => match info.const_input(3) {
            Some(z) if z.dtype() == b.dtype() && (z.len() == 1 || (z.rank() == 1 && z.len() == n)) => {
                zero_points(Some(z))?
            }
            _ => return Ok(None),
        },
    };
    let b = b.to_aligned();
    PackedB::new(int8(&b)?, k, n, false, &zb).map(Some).map_err(Error::invalid)
}

/// The packed kernel for a MatMulInteger node, or `fallback` when B is not a packable constant
/// (with an epilogue, B must be one: the optimizer checks).
pub(crate) fn packed_factory(
    info: &NodeInfo<'_>,
    fallback: Box<dyn Kernel>,
    epi: Option<Epilogue>,
) -> Result<Box<dyn Kernel>> {
    Ok(match (pack_b(info)?, epi) {
        (Some(b), epi) => Box::new(PackedMatMulInteger { b, fallback, epi }),
        (None, None) => fallback,
        (None, Some(_)) => return Err(Error::invalid("a fused integer product needs a constant 2-D B")),
    })
}

/// A's rows as the packed product takes them.
struct Rows {
    a: Tensor,
    rows: usize,
    za: SmallVec<[i32; 4]>,
    shape: vinort_ir::Shape,
}

impl PackedMatMulInteger {
    /// A, its row count, zero points and the output shape, when the packed path takes these
    /// inputs.
    fn rows(&self, inputs: &[Option<&Value>]) -> Result<Option<Rows>> {
        let a = tensor_in(inputs, 0)?;
        let (k, n) = (self.b.k(), self.b.n());
        let Some((&ka, lead)) = a.shape().split_last() else { return Ok(None) };
        if ka != k || !matches!(a.dtype(), DType::U8 | DType::I8) {
            return Ok(None);
        }
        let rows: usize = lead.iter().product();
        let za = zero_points(opt_tensor_in(inputs, 2)?)?;
        let za = match za.len() {
            1 => za,
            // One zero point per row of A's matrices (a 1-D a_zero_point of M elements).
            m if lead.last() == Some(&m) && m > 0 => za.iter().copied().cycle().take(rows).collect(),
            _ => return Ok(None),
        };
        let mut shape: vinort_ir::Shape = lead.into();
        shape.push(n);
        Ok(Some(Rows { a: a.to_aligned(), rows, za, shape }))
    }

    fn product(&self, r: &Rows, c: &mut [i32]) -> Result<()> {
        let (k, n) = (self.b.k(), self.b.n());
        qgemm(r.rows, int8(&r.a)?, k, &r.za, &self.b, c, n, true).map_err(Error::invalid)
    }
}

/// Output elements per task of the fused tail: whole rows, about 64 KB of f32 and as much of
/// i32, so a task's conversion, scale, bias and activation passes stay in L2.
const TAIL_CHUNK: usize = 1 << 14;

/// `y = epi(acc as f32)` for rows of `n`, in parallel blocks of rows for a large product: run
/// as one serial pass after the parallel product, the tail of BERT-mini's 128 × 1024
/// intermediate product took as long as a fifth of the product itself.
fn tail(epi: &Epilogue, acc: &[i32], y: &mut [f32], n: usize, ops: Operands<'_>) -> Result<()> {
    let block = |offset: usize, y: &mut [f32], acc: &[i32]| {
        y.iter_mut().zip(acc).for_each(|(y, a)| *y = *a as f32);
        epi.apply(y, offset, n, ops)
    };
    if n == 0 || !crate::par::worth(y.len(), crate::par::ELEMENTS) {
        return block(0, y, acc);
    }
    use rayon::prelude::*;
    let rows = TAIL_CHUNK.div_ceil(n);
    y.par_chunks_mut(rows * n)
        .zip(acc.par_chunks(rows * n))
        .enumerate()
        .try_for_each(|(i, (y, acc))| block(i * rows * n, y, acc))
}

impl Kernel for PackedMatMulInteger {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let Some(r) = self.rows(inputs)? else {
            return match self.epi {
                None => self.fallback.run(inputs, ctx),
                Some(_) => Err(Error::unsupported("a fused integer product of inputs its packed form does not take")),
            };
        };
        // qgemm overwrites every element of C (rows x n, ldc = n) once there is a product
        // to take; an empty one (k = 0) keeps the zeroed buffer.
        let full = self.b.k() > 0;
        let out = match &self.epi {
            None if full => Tensor::try_build_full::<i32, Error>(&r.shape, |c| self.product(&r, c))?,
            None => Tensor::try_build::<i32, Error>(&r.shape, |c| self.product(&r, c))?,
            Some(epi) => {
                // The i32 products go to this thread's scratch, kept across runs (a fresh zeroed
                // vector per run was a memset of every product).
                let (mut held, len) = (ACC.take(), r.rows * self.b.n());
                if !full {
                    held.clear();
                }
                if held.len() < len {
                    held.resize(len, 0);
                }
                let acc = &mut held[..len];
                let n = self.b.n();
                let y = self.product(&r, acc).and_then(|()| {
                    let ops = epi.operands(inputs, len)?;
                    Tensor::try_build_full::<f32, Error>(&r.shape, |y| tail(epi, acc, y, n, ops))
                });
                ACC.set(held);
                y?
            }
        };
        Ok(smallvec::smallvec![out.into()])
    }
}
