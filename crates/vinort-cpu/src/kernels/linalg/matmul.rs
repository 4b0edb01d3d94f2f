//! [MatMul](https://onnx.ai/onnx/operators/onnx__MatMul.html) (opsets 1–13+) and
//! [Gemm](https://onnx.ai/onnx/operators/onnx__Gemm.html) (opsets 1–13+).
//!
//! Dtypes: f32 and f64 through the `gemm` crate; f16 and bf16 widened to f32 (so sums
//! accumulate in f32) and narrowed back; i32, i64, u32 and u64 with plain wrapping loops (as
//! two's-complement hardware would).

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::common::{Real, View, check_dtype, from_compute, is_real, matmul_into, to_compute, widen_const};
use super::packed::PackedB;
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in, tensors_in};
use crate::kernels::conv::nchwc;
use crate::kernels::epilogue::{Epilogue, Operands as EpiOperands};
use crate::numeric::Numeric;
use crate::per_shape::PerShape;

const TYPES: [DType; 8] =
    [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U32, DType::U64];

pub(crate) fn register(r: &mut Registry) {
    r.op("", "MatMul", matmul_factory);
    r.op("", "Gemm", gemm_factory);
}

/// How numpy-style MatMul lays out one call: per output batch, where A's and B's matrices start.
#[derive(Debug)]
pub(crate) struct MatMulPlan {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub out_shape: Vec<usize>,
    a_offs: Vec<usize>,
    b_offs: Vec<usize>,
}

impl MatMulPlan {
    pub fn new(a: &[usize], b: &[usize]) -> Result<MatMulPlan> {
        let scalar = || Error::invalid("MatMul inputs must have rank 1 or more");
        // numpy: a 1-D A is a row vector, a 1-D B a column vector; the added axis is dropped
        // from the result.
        let (a_batch, m, ka) = match a {
            [k] => (&a[..0], 1, *k),
            [batch @ .., m, k] => (batch, *m, *k),
            [] => return Err(scalar()),
        };
        let (b_batch, kb, n) = match b {
            [k] => (&b[..0], *k, 1),
            [batch @ .., k, n] => (batch, *k, *n),
            [] => return Err(scalar()),
        };
        if ka != kb {
            return Err(Error::invalid(format!("MatMul inner dimensions differ: {a:?} @ {b:?}")));
        }
        let rank = a_batch.len().max(b_batch.len());
        let mut batch = vec![0; rank];
        for i in 0..rank {
            let da = if i + a_batch.len() >= rank { a_batch[i + a_batch.len() - rank] } else { 1 };
            let db = if i + b_batch.len() >= rank { b_batch[i + b_batch.len() - rank] } else { 1 };
            batch[i] = match (da, db) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => return Err(Error::invalid(format!("MatMul batch dimensions do not broadcast: {a:?} @ {b:?}"))),
            };
        }
        let count: usize = batch.iter().product();
        let offsets = |own: &[usize], mat: usize| {
            let mut offs = Vec::with_capacity(count);
            let mut idx = vec![0usize; rank];
            for _ in 0..count {
                let mut off = 0;
                let mut stride = mat;
                for d in (0..own.len()).rev() {
                    let i = idx[d + rank - own.len()];
                    if own[d] != 1 {
                        off += i * stride;
                    }
                    stride *= own[d];
                }
                offs.push(off);
                for d in (0..rank).rev() {
                    idx[d] += 1;
                    if idx[d] < batch[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            offs
        };
        let a_offs = offsets(a_batch, m * ka);
        let b_offs = offsets(b_batch, ka * n);
        let mut out_shape = batch;
        if a.len() > 1 {
            out_shape.push(m);
        }
        if b.len() > 1 {
            out_shape.push(n);
        }
        Ok(MatMulPlan { m, n, k: ka, out_shape, a_offs, b_offs })
    }

    fn batches(&self) -> usize {
        self.a_offs.len()
    }

    fn real<T: Real>(&self, a: &[T], b: &[T], out: &mut [T]) -> Result<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        if out.is_empty() {
            return Ok(());
        }
        // B shared by every batch and A's batches contiguous: one tall product, so B is packed
        // once instead of once per batch.
        let b_shared = self.b_offs.iter().all(|o| *o == 0);
        let a_dense = self.a_offs.iter().enumerate().all(|(i, o)| *o == i * m * k);
        if b_shared && a_dense {
            let rows = self.batches() * m;
            return matmul_into((rows, n, k), View::rows(a, k), View::rows(b, n), out, n, false, T::ONE, true);
        }
        let job = |(chunk, (ao, bo)): (&mut [T], (&usize, &usize)), par: bool| -> Result<()> {
            let a = a.get(*ao..).ok_or_else(|| Error::invalid("MatMul A offset out of range"))?;
            let b = b.get(*bo..).ok_or_else(|| Error::invalid("MatMul B offset out of range"))?;
            matmul_into((m, n, k), View::rows(a, k), View::rows(b, n), chunk, n, false, T::ONE, par)
        };
        let pairs = self.a_offs.iter().zip(&self.b_offs);
        if self.batches() >= rayon::current_num_threads() && self.batches() > 1 && !crate::par::serial() {
            out.par_chunks_mut(m * n)
                .enumerate()
                .try_for_each(|(i, chunk)| job((chunk, (&self.a_offs[i], &self.b_offs[i])), false))
        } else {
            out.chunks_mut(m * n).zip(pairs).try_for_each(|x| job(x, true))
        }
    }

    /// The f32 product with each batch's B packed for the AVX-512 micro-kernel of
    /// [`PackedB`] (attention's `Q·Kᵀ` and `P·V`, any MatMul of two runtime values): the packed
    /// copy comes from the buffer pool, so a steady-state run allocates nothing, where `gemm`
    /// allocates on every call. B is packed once when every batch shares it. None when this
    /// CPU lacks the micro-kernel or A has too few rows to pay for packing.
    fn packed(&self, a: &[f32], b: &[f32], out: &mut [f32]) -> Option<Result<()>> {
        let (m, n, k) = (self.m, self.n, self.k);
        if m < PACKED_MIN_ROWS
            || k.saturating_mul(n) > PACKED_MAX_B
            || n == 0
            || k == 0
            || out.is_empty()
            || out.len() != self.batches() * m * n
            || !nchwc::available()
        {
            return None;
        }
        let range = |off: usize, len: usize, of: &'static str| {
            off.checked_add(len)
                .ok_or_else(|| Error::invalid(format!("MatMul {of} offset out of range")))
                .map(|e| off..e)
        };
        let pack = |bo: usize| -> Result<PackedB> {
            let b = b.get(range(bo, k * n, "B")?).ok_or_else(|| Error::invalid("MatMul B offset out of range"))?;
            PackedB::new(b, k, n).ok_or_else(|| Error::invalid("MatMul B could not be packed"))
        };
        let job = |i: usize, chunk: &mut [f32], p: &PackedB| -> Result<()> {
            let a = a
                .get(range(self.a_offs[i], m * k, "A")?)
                .ok_or_else(|| Error::invalid("MatMul A offset out of range"))?;
            p.product(a, chunk, None, None, None)
        };
        let b_shared = self.b_offs.iter().all(|o| *o == 0);
        let a_dense = self.a_offs.iter().enumerate().all(|(i, o)| *o == i * m * k);
        Some((|| {
            if b_shared {
                let p = pack(0)?;
                if a_dense {
                    // One tall product over every batch's rows.
                    let a = a.get(..self.batches() * m * k).ok_or_else(|| Error::invalid("MatMul A is too short"))?;
                    return p.product(a, out, None, None, None);
                }
                return out.chunks_mut(m * n).enumerate().try_for_each(|(i, c)| job(i, c, &p));
            }
            if self.batches() >= rayon::current_num_threads() && self.batches() > 1 && !crate::par::serial() {
                out.par_chunks_mut(m * n).enumerate().try_for_each(|(i, c)| job(i, c, &pack(self.b_offs[i])?))
            } else {
                out.chunks_mut(m * n).enumerate().try_for_each(|(i, c)| job(i, c, &pack(self.b_offs[i])?))
            }
        })())
    }

    /// The integer product of `a` and `b` (aligned tensors of `T`) as a new tensor.
    fn int_tensor<T: Numeric>(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Tensor::try_build::<T, Error>(&self.out_shape, |o| self.int(a.as_slice()?, b.as_slice()?, o))
    }

    fn int<T: Numeric>(&self, a: &[T], b: &[T], out: &mut [T]) -> Result<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        if out.is_empty() {
            return Ok(());
        }
        let pairs: Vec<_> = self.a_offs.iter().zip(&self.b_offs).collect();
        out.par_chunks_mut(m * n).zip(pairs).try_for_each(|(c, (ao, bo))| {
            let a = a.get(*ao..*ao + m * k).ok_or_else(|| Error::invalid("MatMul A offset out of range"))?;
            let b = b.get(*bo..*bo + k * n).ok_or_else(|| Error::invalid("MatMul B offset out of range"))?;
            int_product(m, n, k, |i, p| a[i * k + p], b, c);
            Ok(())
        })
    }
}

/// `c += a(i, p) * b[p, :]` over rows `i` of c (row length n), with b row-major k x n.
fn int_product<T: Numeric>(m: usize, n: usize, k: usize, a: impl Fn(usize, usize) -> T, b: &[T], c: &mut [T]) {
    if n == 0 {
        return;
    }
    for (i, crow) in c.chunks_mut(n).take(m).enumerate() {
        for (p, brow) in b.chunks(n).take(k).enumerate() {
            let av = a(i, p);
            for (cv, bv) in crow.iter_mut().zip(brow) {
                *cv = cv.wrap_add(av.wrap_mul(*bv));
            }
        }
    }
}

struct MatMul {
    /// B widened to f32 once when it is an f16/bf16 constant.
    b: Option<Tensor>,
    /// A constant f32 2-D B packed for the AVX-512 micro-kernel.
    packed: Option<PackedB>,
    /// What the graph optimizer fused after it.
    epi: Epilogue,
    /// The broadcast plan of the last pair of input shapes.
    plans: PerShape<MatMulPlan>,
}

/// Products of two runtime values with fewer rows of A go to the GEMM crate: packing B on every
/// call does not pay for so few rows. (Constant weights, packed once, take any number of rows.)
const PACKED_MIN_ROWS: usize = 8;

/// Elements of a runtime B above which packing it on every call costs more than it saves:
/// past the L2 cache, packing streams B through memory twice before the product reads it
/// again (`cargo bench --bench kernels` on a Zen 4: 128 × 768 × 3072 at 110 GFLOP/s packed,
/// 182 through `gemm`; 1024³ 174 against 194; 512³, whose B is this size, 179 against 107).
/// Attention's per-head `Kᵀ` and `V` are far below it.
const PACKED_MAX_B: usize = 512 * 512;

pub(crate) fn matmul_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    fused_matmul_factory(info, Epilogue::default())
}

/// A MatMul followed by the elementwise tail `epi`, applied before the output is sealed.
pub(crate) fn fused_matmul_factory(info: &NodeInfo<'_>, epi: Epilogue) -> Result<Box<dyn Kernel>> {
    check_dtype(info.node, info.input_dtype(0), &TYPES)?;
    check_dtype(info.node, info.input_dtype(1), &TYPES)?;
    let b = match info.const_input(1) {
        Some(t) if is_real(t.dtype()) => widen_const(t)?,
        _ => None,
    };
    let packed = match (b.as_ref().or(info.const_input(1)), info.input_dtype(0)) {
        (Some(t), Some(DType::F32))
            if t.rank() == 2 && epi.scale.is_none() && matches!(t.dtype(), DType::F32 | DType::F16 | DType::BF16) =>
        {
            let t = to_compute(t)?;
            PackedB::new(t.as_slice::<f32>()?, t.shape()[0], t.shape()[1])
        }
        _ => None,
    };
    // The packed form serves every f32 product; other paths widen B per run.
    let b = if packed.is_some() { None } else { b };
    Ok(Box::new(MatMul { b, packed, epi, plans: PerShape::default() }))
}

impl Kernel for MatMul {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let a = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        if a.dtype() != b.dtype() {
            return Err(Error::invalid(format!("MatMul inputs differ in type: {} and {}", a.dtype(), b.dtype())));
        }
        // Keyed by both shapes; the separator is no extent a tensor in memory can have.
        let key: smallvec::SmallVec<[usize; 16]> =
            a.shape().iter().chain(&[usize::MAX]).chain(b.shape()).copied().collect();
        let plan = self.plans.get(&key, || MatMulPlan::new(a.shape(), b.shape()))?;
        let dtype = a.dtype();
        let len: usize = plan.out_shape.iter().product();
        let z = self.epi.operands(inputs, len)?;
        if let Some(p) = &self.packed
            && dtype == DType::F32
            && a.rank() >= 2
            && b.shape() == p.shape()
            && plan.m * plan.n > 0
        {
            let a = a.to_aligned();
            let bias = self.epi.bias.as_ref().map(|t| t.as_slice::<f32>()).transpose()?;
            let y = Tensor::try_build_full::<f32, Error>(&plan.out_shape, |o| {
                p.product(a.as_slice::<f32>()?, o, bias, z.z, self.epi.act)?;
                self.epi.clamp_after(o);
                Ok(())
            })?;
            return Ok(smallvec::smallvec![y.into()]);
        }
        // B may be held as the file maps it (`holds_input`): `to_compute` aligns it.
        let y = if is_real(dtype) {
            let ac = to_compute(a)?;
            let bc = match &self.b {
                Some(t) if t.shape() == b.shape() => std::borrow::Cow::Borrowed(t),
                _ => to_compute(b)?,
            };
            let y = match ac.dtype() {
                DType::F64 => {
                    Tensor::try_build::<f64, Error>(&plan.out_shape, |o| plan.real(ac.as_slice()?, bc.as_slice()?, o))?
                }
                _ => Tensor::try_build::<f32, Error>(&plan.out_shape, |o| {
                    let (a, b) = (ac.as_slice()?, bc.as_slice()?);
                    match plan.packed(a, b, o) {
                        Some(done) => done?,
                        None => plan.real(a, b, o)?,
                    }
                    self.epi.apply(o, 0, plan.out_shape.last().copied().unwrap_or(1), z)
                })?,
            };
            from_compute(y, dtype)?
        } else {
            let (a, b) = (a.to_aligned(), b.to_aligned());
            match dtype {
                DType::I32 => plan.int_tensor::<i32>(&a, &b)?,
                DType::I64 => plan.int_tensor::<i64>(&a, &b)?,
                DType::U32 => plan.int_tensor::<u32>(&a, &b)?,
                DType::U64 => plan.int_tensor::<u64>(&a, &b)?,
                d => return Err(Error::unsupported(format!("MatMul does not support {d}"))),
            }
        };
        Ok(smallvec::smallvec![y.into()])
    }

    fn holds_input(&self, i: usize) -> bool {
        i == 1 && self.packed.is_some()
    }
}

struct Gemm {
    alpha: f32,
    beta: f32,
    trans_a: bool,
    trans_b: bool,
    /// Opsets before 7 broadcast C only when the `broadcast` attribute says so.
    exact_c: bool,
    b: Option<Tensor>,
    /// A constant f32 B, as `K × N` (transposed once when `transB`), packed for the micro-kernels.
    packed: Option<PackedB>,
    /// Every run takes the packed path (see `Gemm::packed`), so B's data is never read.
    holds_b: bool,
    /// What the graph optimizer fused after it.
    epi: Epilogue,
}

pub(crate) fn gemm_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    fused_gemm_factory(info, Epilogue::default())
}

/// A Gemm followed by the elementwise tail `epi`, applied before the output is sealed.
pub(crate) fn fused_gemm_factory(info: &NodeInfo<'_>, epi: Epilogue) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    for i in 0..3 {
        check_dtype(n, info.input_dtype(i), &TYPES)?;
    }
    let b = match info.const_input(1) {
        Some(t) if is_real(t.dtype()) => widen_const(t)?,
        _ => None,
    };
    let trans_b = n.attr_or("transB", false)?;
    let packed = match (b.as_ref().or(info.const_input(1)), info.input_dtype(0)) {
        (Some(t), Some(DType::F32)) if t.rank() == 2 && matches!(t.dtype(), DType::F32 | DType::F16 | DType::BF16) => {
            let t = to_compute(t)?;
            let (w, [r, c]) = (t.as_slice::<f32>()?, [t.shape()[0], t.shape()[1]]);
            if trans_b {
                let kn: Vec<f32> = (0..r * c).map(|x| w[(x % r) * c + x / r]).collect();
                PackedB::new(&kn, c, r)
            } else {
                PackedB::new(w, r, c)
            }
        }
        _ => None,
    };
    let (alpha, beta, trans_a) = (n.attr_or("alpha", 1.0f32)?, n.attr_or("beta", 1.0f32)?, n.attr_or("transA", false)?);
    // The conditions of `Gemm::packed` that do not depend on A: C absent or ignored, or a
    // constant bias row added whole.
    let bias_row =
        |c: &Tensor| matches!(c.shape(), [x] | [1, x] if packed.as_ref().is_some_and(|p| p.shape()[1] == *x));
    let c_fits = match n.inputs.get(2).copied().flatten() {
        None => true,
        Some(_) => beta == 0.0 || (beta == 1.0 && info.const_input(2).is_some_and(bias_row)),
    };
    let holds_b = packed.is_some() && alpha == 1.0 && epi.scale.is_none() && !trans_a && c_fits;
    Ok(Box::new(Gemm {
        alpha,
        beta,
        trans_a,
        trans_b,
        exact_c: n.opset < 7 && !n.attr_or("broadcast", false)?,
        // The packed form serves every product when B is held.
        b: if holds_b { None } else { b },
        packed,
        holds_b,
        epi,
    }))
}

/// Strides that read C as if broadcast to (m, n).
fn c_strides(c: &[usize], m: usize, n: usize, exact: bool) -> Result<(usize, usize)> {
    let bad = || Error::invalid(format!("Gemm C of shape {c:?} does not broadcast to [{m}, {n}]"));
    if exact && c != [m, n] {
        return Err(bad());
    }
    let (cm, cn) = match c {
        [] => (1, 1),
        [x] => (1, *x),
        [x, y] => (*x, *y),
        _ => return Err(bad()),
    };
    if (cm != 1 && cm != m) || (cn != 1 && cn != n) {
        return Err(bad());
    }
    Ok((if cm == 1 { 0 } else { cn }, if cn == 1 { 0 } else { 1 }))
}

/// One Gemm product's operands: `(m, n, k)`, A and B as given (before `trans_a`/`trans_b`), and
/// C with its row and column strides into the `[m, n]` output.
struct Operands<'a> {
    dims: (usize, usize, usize),
    a: &'a Tensor,
    b: &'a Tensor,
    c: Option<(&'a Tensor, usize, usize)>,
}

impl Gemm {
    /// `alpha · A·B + beta · C` by the packed weights, when A is f32 with contiguous rows, alpha
    /// is 1 and C is absent, ignored (beta 0) or added whole (beta 1) as a bias over N or an
    /// `M × N` residual; None otherwise.
    fn packed(
        &self,
        Operands { dims: (m, n, k), a, b, c }: Operands<'_>,
        inputs: &[Option<&Value>],
    ) -> Option<Result<Tensor>> {
        let p = self.packed.as_ref()?;
        let b_kn = if self.trans_b { [b.shape()[1], b.shape()[0]] } else { [b.shape()[0], b.shape()[1]] };
        if a.dtype() != DType::F32
            || self.alpha != 1.0
            || self.epi.scale.is_some()
            || b_kn != p.shape()
            || (self.trans_a && m != 1)
        {
            return None;
        }
        let c = c.filter(|_| self.beta != 0.0);
        if c.is_some_and(|(t, rs, cs)| self.beta != 1.0 || cs != 1 || t.len() != if rs == 0 { n } else { m * n }) {
            return None;
        }
        Some((|| {
            let a = a.to_aligned();
            let c = c.map(|(t, rs, _)| (t.to_aligned(), rs));
            let c = c.as_ref().map(|(t, rs)| t.as_slice::<f32>().map(|s| (s, *rs))).transpose()?;
            let (bias, z) = match c {
                Some((s, 0)) => (Some(s), None),
                Some((s, _)) => (None, Some(s)),
                None => (None, None),
            };
            let epi_z = self.epi.operands(inputs, m * n)?;
            Tensor::try_build::<f32, Error>(&[m, n], |out| {
                p.product(&a.as_slice::<f32>()?[..m * k], out, bias, z, None)?;
                self.epi.apply(out, 0, n, epi_z)
            })
        })())
    }

    fn real<T: Real>(&self, Operands { dims: (m, n, k), a, b, c }: Operands<'_>, z: EpiOperands<'_>) -> Result<Tensor> {
        let mut av = View::rows(a.as_slice::<T>()?, a.shape()[1]);
        let mut bv = View::rows(b.as_slice::<T>()?, b.shape()[1]);
        if self.trans_a {
            av = av.t();
        }
        if self.trans_b {
            bv = bv.t();
        }
        let beta = T::from_f64(self.beta as f64);
        Tensor::try_build::<T, Error>(&[m, n], |out| {
            let acc = match c {
                Some((c, rs, cs)) if self.beta != 0.0 && n > 0 => {
                    let c = c.as_slice::<T>()?;
                    for (i, row) in out.chunks_mut(n).enumerate() {
                        for (j, y) in row.iter_mut().enumerate() {
                            *y = beta * c[i * rs + j * cs];
                        }
                    }
                    true
                }
                _ => false,
            };
            matmul_into((m, n, k), av, bv, out, n, acc, T::from_f64(self.alpha as f64), true)?;
            self.epi.apply(out, 0, n, z)
        })
    }

    fn int<T: Numeric>(&self, Operands { dims: (m, n, k), a, b, c }: Operands<'_>) -> Result<Tensor> {
        let (a, b) = (a.to_aligned(), b.to_aligned());
        let (a, b) = (a.as_slice::<T>()?, b.as_slice::<T>()?);
        let bt: Vec<T>;
        let b = if self.trans_b {
            bt = (0..k * n).map(|x| b[(x % n) * k + x / n]).collect();
            &bt[..]
        } else {
            b
        };
        let (alpha, beta) = (T::from_f64_as(self.alpha as f64), T::from_f64_as(self.beta as f64));
        let trans_a = self.trans_a;
        let c_owned = c.map(|(t, rs, cs)| (t.to_aligned(), rs, cs));
        let c = match &c_owned {
            Some((t, rs, cs)) => Some((t.as_slice::<T>()?, *rs, *cs)),
            None => None,
        };
        Ok(Tensor::build::<T>(&[m, n], |out| {
            if n == 0 {
                return;
            }
            int_product(m, n, k, |i, p| if trans_a { a[p * m + i] } else { a[i * k + p] }, b, out);
            for (i, row) in out.chunks_mut(n).enumerate() {
                for (j, y) in row.iter_mut().enumerate() {
                    *y = alpha.wrap_mul(*y);
                    if let Some((c, rs, cs)) = c {
                        *y = y.wrap_add(beta.wrap_mul(c[i * rs + j * cs]));
                    }
                }
            }
        }))
    }
}

impl Kernel for Gemm {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [a, b] = tensors_in(inputs)?;
        let c = opt_tensor_in(inputs, 2)?;
        let dtype = a.dtype();
        if b.dtype() != dtype || c.is_some_and(|c| c.dtype() != dtype) {
            return Err(Error::invalid("Gemm inputs must share one element type"));
        }
        let (&[a0, a1], &[b0, b1]) = (a.shape(), b.shape()) else {
            return Err(Error::invalid(format!("Gemm needs 2-D A and B, got {:?} and {:?}", a.shape(), b.shape())));
        };
        let (m, k) = if self.trans_a { (a1, a0) } else { (a0, a1) };
        let (kb, n) = if self.trans_b { (b1, b0) } else { (b0, b1) };
        if k != kb {
            return Err(Error::invalid(format!("Gemm inner dimensions differ: {k} and {kb}")));
        }
        let cs = match c {
            Some(c) => Some(c_strides(c.shape(), m, n, self.exact_c)?),
            None => None,
        };
        let dims = (m, n, k);
        let ops = Operands { dims, a, b, c: c.zip(cs).map(|(t, (rs, cs))| (t, rs, cs)) };
        if let Some(y) = self.packed(ops, inputs) {
            return Ok(smallvec::smallvec![y?.into()]);
        }
        let y = if is_real(dtype) {
            let ac = to_compute(a)?;
            let bc = match &self.b {
                Some(t) if t.shape() == b.shape() => std::borrow::Cow::Borrowed(t),
                _ => to_compute(b)?,
            };
            let cc = c.map(to_compute).transpose()?;
            let cc = cc.as_deref().zip(cs).map(|(t, (rs, cs))| (t, rs, cs));
            let ops = Operands { dims, a: &ac, b: &bc, c: cc };
            let z = self.epi.operands(inputs, m * n)?;
            let y = match ac.dtype() {
                DType::F64 => self.real::<f64>(ops, z)?,
                _ => self.real::<f32>(ops, z)?,
            };
            from_compute(y, dtype)?
        } else {
            let ops = Operands { dims, a, b, c: c.zip(cs).map(|(t, (rs, cs))| (t, rs, cs)) };
            match dtype {
                DType::I32 => self.int::<i32>(ops)?,
                DType::I64 => self.int::<i64>(ops)?,
                DType::U32 => self.int::<u32>(ops)?,
                DType::U64 => self.int::<u64>(ops)?,
                d => return Err(Error::unsupported(format!("Gemm does not support {d}"))),
            }
        };
        Ok(smallvec::smallvec![y.into()])
    }

    fn holds_input(&self, i: usize) -> bool {
        i == 1 && self.holds_b
    }
}
