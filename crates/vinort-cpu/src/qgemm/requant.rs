//! [`qgemm_requant`]: the product with QLinearConv's requantization fused into the VNNI
//! kernel's store, so that each tile's sums go from registers to bytes without an i32 product
//! in memory (MobileNetV2's 1x1 convolutions have 16 to 320 input channels: there the store
//! costs as much as the dot products, and a separate pass over an i32 block cost more).

#[cfg(target_arch = "x86_64")]
use super::x86;
use super::{ASrc, Int8, Isa, Kern, PackedB, RowInfo, block_rows, checked};

/// The requantization [`qgemm_requant`] applies to each sum `C[i][j]`, ONNX Runtime's:
/// `saturate(round_half_even(f32(C[i][j] + bias[j]) · mult[j]) + zy)` to `range`, an 8-bit
/// type's. The product is clamped to the range less `zy` before rounding (the same for integer
/// bounds), so a NaN product gives the range's low end, as MLAS's `max` does.
pub(crate) struct Requant<'a> {
    /// Per column of `B`.
    pub(crate) bias: &'a [i32],
    /// Per column of `B`.
    pub(crate) mult: &'a [f32],
    pub(crate) zy: i32,
    pub(crate) range: (i32, i32),
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Requant<'_> {
    /// The product's bounds, `range − zy`.
    pub(super) fn bounds(&self) -> (f32, f32) {
        ((self.range.0 - self.zy) as f32, (self.range.1 - self.zy) as f32)
    }

    /// Whether saturating the rounded product plus `zy` to the 8-bit type is the whole clamp:
    /// the range is the type's, and every multiplier is at most 1/2 in magnitude, so a product
    /// (at most 2³¹ · 1/2) converts to i32 without overflow.
    pub(super) fn saturating(&self, signed: bool) -> bool {
        let full = if signed { (-128, 127) } else { (0, 255) };
        self.range == full && self.mult.iter().all(|m| m.abs() <= 0.5)
    }
}

thread_local! {
    /// [`qgemm_requant`]'s biases with the zero-point terms folded in, reused.
    static FOLDED: std::cell::Cell<Vec<i32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// [`qgemm`] on the calling thread with each tile's sums requantized ([`Requant`]) from
/// registers straight into `y` (m × n bytes, row stride `ldy`; i8 values when `signed`):
/// no i32 product in memory. Only the AVX-512 VNNI kernel has this store: elsewhere it returns
/// `Ok(false)` having written nothing, and the caller requantizes [`qgemm`]'s sums itself.
#[allow(clippy::too_many_arguments)] // The GEMM shape and the requantization.
pub(crate) fn qgemm_requant(
    m: usize,
    a: Int8<'_>,
    lda: usize,
    za: &[i32],
    b: &PackedB,
    q: &Requant<'_>,
    y: &mut [u8],
    ldy: usize,
    signed: bool,
) -> Result<bool, String> {
    if Isa::detected() != Isa::Avx512Vnni {
        return Ok(false);
    }
    let n = b.n;
    if q.bias.len() < n || q.mult.len() < n {
        return Err(format!("qgemm: {} biases and {} multipliers for {n} columns", q.bias.len(), q.mult.len()));
    }
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    if q.range.0 < lo || q.range.1 > hi || q.range.0 > q.range.1 || !(lo..=hi).contains(&q.zy) {
        return Err(format!("qgemm: requantization range {:?} with zero point {} for bytes", q.range, q.zy));
    }
    let Some(y) = checked(m, a, lda, za, b, y, ldy)? else { return Ok(true) };
    let kern = Kern::checked(Isa::Avx512Vnni)?;
    let mut src = ASrc::new(a, lda, b.k, za, b);
    let mut folded = FOLDED.take();
    folded.clear();
    // With symmetric weights (zb' = 0) and one za', the product's only zero-point term is
    // `−za'·(colsum − k·zb')` per column: folded into the bias once, the kernel stores its dot
    // products as they are.
    let bias = match (b.zb_uniform, src.za_uniform) {
        (Some(0), Some(za)) => {
            folded.extend((0..n).map(|j| q.bias[j].wrapping_sub(za.wrapping_mul(b.csk[j]))));
            src.za_uniform = Some(0);
            &folded[..]
        }
        _ => q.bias,
    };
    let mc = block_rows(b.k);
    let mut info = RowInfo::default();
    for (i, chunk) in y.chunks_mut(mc.saturating_mul(ldy)).enumerate() {
        let row0 = i * mc;
        let block = src.block(kern, row0, (m - row0).min(mc), &mut info);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Kern::checked` found the features `vnni_block` is compiled for; the store
        // covers the block's rows (chunks of `mc` rows of `y`, validated by `checked`).
        unsafe {
            if signed {
                x86::vnni_block(block, b, &b.panels, &mut x86::RequantOut::<true>::new(chunk, ldy, q, bias))
            } else {
                x86::vnni_block(block, b, &b.panels, &mut x86::RequantOut::<false>::new(chunk, ldy, q, bias))
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (block, chunk, bias);
    }
    FOLDED.set(folded);
    Ok(true)
}
