//! Process-wide counters of tensor buffer allocations and tensor data copies.
//!
//! Every buffer vinort allocates for tensor data (Rust kernels, aligned copies, OpenVINO
//! output tensors), every buffer it reuses from the [`crate::tensor::pool`] instead, and every
//! copy of tensor data it makes is counted here, so `vinort perf`
//! can report allocations and copies per inference in steady state. The counters are
//! relaxed atomics: a few nanoseconds per tensor, never a lock.
//!
//! ```
//! let before = vinort_ir::stats::snapshot();
//! let t = vinort_ir::Tensor::from_slice(&[2], &[1.0f32, 2.0]).unwrap();
//! let d = vinort_ir::stats::snapshot().since(&before);
//! assert!(d.tensor_allocs + d.tensor_reuses >= 1 && d.tensor_copies >= 1);
//! # drop(t);
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);
static COPIES: AtomicU64 = AtomicU64::new(0);
static COPY_BYTES: AtomicU64 = AtomicU64::new(0);
static REUSES: AtomicU64 = AtomicU64::new(0);
static REUSE_BYTES: AtomicU64 = AtomicU64::new(0);

/// The counters at one moment (or the difference of two moments, see [`Counts::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tensor data buffers allocated.
    pub tensor_allocs: u64,
    /// Bytes in those buffers.
    pub tensor_alloc_bytes: u64,
    /// Tensor data copies made (whole tensors copied from one buffer into another).
    pub tensor_copies: u64,
    /// Bytes copied.
    pub tensor_copy_bytes: u64,
    /// Tensor data buffers taken from the [`crate::tensor::pool`] instead of allocated.
    pub tensor_reuses: u64,
    /// Bytes in those buffers.
    pub tensor_reuse_bytes: u64,
}

impl Counts {
    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            tensor_allocs: self.tensor_allocs.wrapping_sub(earlier.tensor_allocs),
            tensor_alloc_bytes: self.tensor_alloc_bytes.wrapping_sub(earlier.tensor_alloc_bytes),
            tensor_copies: self.tensor_copies.wrapping_sub(earlier.tensor_copies),
            tensor_copy_bytes: self.tensor_copy_bytes.wrapping_sub(earlier.tensor_copy_bytes),
            tensor_reuses: self.tensor_reuses.wrapping_sub(earlier.tensor_reuses),
            tensor_reuse_bytes: self.tensor_reuse_bytes.wrapping_sub(earlier.tensor_reuse_bytes),
        }
    }
}

/// The counters now.
pub fn snapshot() -> Counts {
    Counts {
        tensor_allocs: ALLOCS.load(Relaxed),
        tensor_alloc_bytes: ALLOC_BYTES.load(Relaxed),
        tensor_copies: COPIES.load(Relaxed),
        tensor_copy_bytes: COPY_BYTES.load(Relaxed),
        tensor_reuses: REUSES.load(Relaxed),
        tensor_reuse_bytes: REUSE_BYTES.load(Relaxed),
    }
}

/// Counts one tensor buffer of `bytes` bytes (for providers that allocate outside [`crate::Tensor`]).
pub fn record_alloc(bytes: usize) {
    ALLOCS.fetch_add(1, Relaxed);
    ALLOC_BYTES.fetch_add(bytes as u64, Relaxed);
}

/// Counts one copy of `bytes` bytes of tensor data.
pub fn record_copy(bytes: usize) {
    COPIES.fetch_add(1, Relaxed);
    COPY_BYTES.fetch_add(bytes as u64, Relaxed);
}

/// Counts one tensor buffer of `bytes` bytes reused from the buffer pool.
pub fn record_reuse(bytes: usize) {
    REUSES.fetch_add(1, Relaxed);
    REUSE_BYTES.fetch_add(bytes as u64, Relaxed);
}
