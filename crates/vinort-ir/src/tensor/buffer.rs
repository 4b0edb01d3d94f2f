//! Owned tensor storage: 64-byte aligned, zeroed buffers, and the bounded pool that takes a
//! dropped buffer back so a static-shape model reuses its buffers run after run.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::dtype::Elem;

/// A 64-byte aligned, zero-initialised heap buffer.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf uniquely owns its allocation, like Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

/// Alignment of every buffer vinort allocates (one cache line, and what AVX-512 wants).
pub const ALIGN: usize = 64;

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes: a buffer of this exact size that an earlier tensor
    /// gave back to the [`pool`] when there is one (zeroed again here), else a fresh one.
    pub fn zeroed(len: usize) -> AlignedBuf {
        if len == 0 {
            // A dangling but aligned pointer: never dereferenced for a zero-length slice.
            let ptr = NonNull::new(ALIGN as *mut u8).unwrap_or(NonNull::dangling());
            return AlignedBuf { ptr, len };
        }
        if let Some(ptr) = pool::take(len) {
            // SAFETY: the pool hands out a buffer of exactly `len` bytes, allocated with
            // `Layout(len, ALIGN)` and owned by nobody else now.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
            crate::stats::record_reuse(len);
            return AlignedBuf { ptr, len };
        }
        let layout = Layout::from_size_align(len, ALIGN)
            .unwrap_or_else(|_| panic!("allocation of {len} bytes exceeds the address space"));
        crate::stats::record_alloc(len);
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { std::alloc::handle_alloc_error(layout) };
        AlignedBuf { ptr, len }
    }

    /// A buffer of `len` bytes that its owner will overwrite whole: one from the [`pool`]
    /// keeps the bytes its last tensor left (not zeroed again, which was a memset of every
    /// tensor every run), a fresh one is zeroed. Either way every byte is initialised, but
    /// it may not be a valid `bool`: crate-private so that only [`crate::Tensor::try_build_full`],
    /// which zeroes bool buffers instead, views one through [`AlignedBuf::typed_mut`].
    pub(crate) fn for_overwrite(len: usize) -> AlignedBuf {
        if len != 0
            && let Some(ptr) = pool::take(len)
        {
            crate::stats::record_reuse(len);
            // The pool's buffers were zeroed when allocated and only written since.
            return AlignedBuf { ptr, len };
        }
        AlignedBuf::zeroed(len)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes (zeroed at allocation).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: unique owner; ptr is valid for len initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The buffer viewed as elements of `T` (the buffer is 64-byte aligned, and its length
    /// must be a multiple of `size_of::<T>()`).
    pub fn typed_mut<T: Elem>(&mut self) -> &mut [T] {
        let n = self.len / std::mem::size_of::<T>().max(1);
        // SAFETY: 64-byte alignment satisfies T's; the bytes are initialised and a valid T:
        // zeroed (all-zero is 0, 0.0 or false) or, for buffers from `for_overwrite`, which
        // are never viewed as bool, any pattern (a value of every other Elem); n elements
        // fit in len bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<T>(), n) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len != 0 && !pool::give(self.ptr, self.len) {
            // SAFETY: allocated in `zeroed` with exactly this layout, and the pool did not
            // keep it.
            unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.len, ALIGN)) }
        }
    }
}

/// A bounded pool of tensor buffers that tensors gave back, keyed by exact size.
///
/// A static-shape model asks for the same buffer sizes on every run, so after the first run
/// the Cpu provider's intermediate and output tensors come from here instead of the system
/// allocator (no page faults, no allocator locks): vinort's counterpart of ONNX Runtime's
/// memory arena. The pool is bounded, unlike a cache that grows with every shape it sees: it
/// keeps at most [`limit`] bytes in all (64 MiB unless [`set_limit`] says otherwise), at most
/// [`PER_SIZE`] buffers of one size, and no buffer over a quarter of the limit. A buffer it
/// cannot keep is freed.
///
/// ```
/// use vinort_ir::{Tensor, stats, tensor::pool};
/// drop(Tensor::zeros(vinort_ir::DType::F32, &[1000, 3]));
/// let before = stats::snapshot();
/// let t = Tensor::zeros(vinort_ir::DType::F32, &[1000, 3]); // the same size again
/// let d = stats::snapshot().since(&before);
/// assert_eq!((d.tensor_allocs, d.tensor_reuses), (0, 1));
/// assert!(t.as_slice::<f32>().unwrap().iter().all(|v| *v == 0.0)); // zeroed again
/// assert!(pool::pooled_bytes() <= pool::limit());
///
/// pool::set_limit(0); // pooling off: everything kept is freed, nothing more is kept
/// assert_eq!(pool::pooled_bytes(), 0);
/// drop(t);
/// let before = stats::snapshot();
/// let _again = Tensor::zeros(vinort_ir::DType::F32, &[1000, 3]);
/// assert_eq!(stats::snapshot().since(&before).tensor_allocs, 1);
/// ```
pub mod pool {
    use std::collections::BTreeMap;
    use std::ptr::NonNull;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// At most this many buffers of one size are kept.
    pub const PER_SIZE: usize = 32;

    static LIMIT: AtomicUsize = AtomicUsize::new(64 << 20);
    static POOL: Mutex<Pool> = Mutex::new(Pool { by_len: BTreeMap::new(), bytes: 0 });

    struct Kept(NonNull<u8>);
    // SAFETY: a kept buffer is owned by the pool alone; moving it between threads is moving
    // ownership of plain bytes.
    unsafe impl Send for Kept {}

    struct Pool {
        by_len: BTreeMap<usize, Vec<Kept>>,
        bytes: usize,
    }

    /// The most bytes the pool keeps.
    pub fn limit() -> usize {
        LIMIT.load(Relaxed)
    }

    /// Sets the most bytes the pool keeps (0 turns pooling off) and frees what is over it.
    pub fn set_limit(bytes: usize) {
        LIMIT.store(bytes, Relaxed);
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        while p.bytes > bytes {
            let Some((&len, _)) = p.by_len.iter().next_back() else { break };
            let list = p.by_len.get_mut(&len).expect("key just seen");
            let kept = list.pop().expect("lists are never left empty");
            if list.is_empty() {
                p.by_len.remove(&len);
            }
            p.bytes -= len;
            super::free(kept.0, len);
        }
    }

    /// Bytes held by the pool now.
    pub fn pooled_bytes() -> usize {
        POOL.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    pub(super) fn take(len: usize) -> Option<NonNull<u8>> {
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let list = p.by_len.get_mut(&len)?;
        let kept = list.pop()?;
        if list.is_empty() {
            p.by_len.remove(&len);
        }
        p.bytes -= len;
        Some(kept.0)
    }

    /// Keeps the buffer when the bounds allow; false means the caller must free it.
    pub(super) fn give(ptr: NonNull<u8>, len: usize) -> bool {
        let limit = limit();
        if len > limit / 4 {
            return false;
        }
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if p.bytes + len > limit {
            return false;
        }
        let list = p.by_len.entry(len).or_default();
        if list.len() >= PER_SIZE {
            return false;
        }
        list.push(Kept(ptr));
        p.bytes += len;
        true
    }
}

fn free(ptr: NonNull<u8>, len: usize) {
    // SAFETY: every pooled buffer was allocated in `AlignedBuf::zeroed` with this layout.
    unsafe { dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(len, ALIGN)) }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}
