//! A global allocator that counts heap allocations, so `vinort perf` and the benchmark
//! harness can report allocations per inference. A binary opts in:
//!
//! ```
//! #[global_allocator]
//! static ALLOCATOR: vinort_tools::alloc_count::Counting = vinort_tools::alloc_count::Counting;
//!
//! let before = vinort_tools::alloc_count::snapshot();
//! let v = std::hint::black_box(vec![0u8; 100]);
//! assert_eq!(vinort_tools::alloc_count::snapshot().since(&before).allocs, 1);
//! # drop(v);
//! ```
//!
//! Only allocations made through Rust's allocator pass through here: vinort's own code, the
//! Rust CPU kernels and their threads. Memory that OpenVINO's C++ code takes with
//! `malloc`/`new` never reaches this allocator and is not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static CALLS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed (wrapping: only differences and the value with the
/// allocator installed from the start are meaningful).
static LIVE: AtomicU64 = AtomicU64::new(0);

/// [`System`] with relaxed counters: allocation calls, bytes requested, bytes live.
pub struct Counting;

#[inline]
fn count(bytes: usize) {
    CALLS.fetch_add(1, Relaxed);
    BYTES.fetch_add(bytes as u64, Relaxed);
    LIVE.fetch_add(bytes as u64, Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which is a correct
// allocator; counting is a side effect that neither allocates nor touches the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    // A growing `Vec` reallocates: counted as one allocation of the new size, as it may move
    // and is as much a cost on the hot path as a fresh allocation.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The counters at one moment, or the difference of two moments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapCounts {
    /// Allocation calls (`alloc`, `alloc_zeroed`, `realloc`).
    pub allocs: u64,
    /// Bytes requested by those calls.
    pub bytes: u64,
}

impl HeapCounts {
    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &HeapCounts) -> HeapCounts {
        HeapCounts { allocs: self.allocs.wrapping_sub(earlier.allocs), bytes: self.bytes.wrapping_sub(earlier.bytes) }
    }
}

/// Bytes allocated through Rust's allocator and not freed yet (0 unless [`Counting`] is the
/// global allocator). With RSS beside it, growth it does not show is outside Rust's heap:
/// OpenVINO's own allocations, or memory the C allocator keeps.
pub fn live_bytes() -> u64 {
    LIVE.load(Relaxed)
}

/// The counters now (all zero unless [`Counting`] is the global allocator).
pub fn snapshot() -> HeapCounts {
    HeapCounts { allocs: CALLS.load(Relaxed), bytes: BYTES.load(Relaxed) }
}
