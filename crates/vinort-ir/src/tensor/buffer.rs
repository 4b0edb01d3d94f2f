//! Owned tensor storage: 64-byte aligned, zeroed buffers, and the bounded pool that takes a
//! dropped buffer back so a static-shape model reuses its buffers run after run.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::dtype::Elem;
use crate::limits::{self, Refused, Which};

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
    /// A fresh zeroed buffer of `len` bytes from the system allocator (tensors take theirs
    /// from the [`pool`] instead, through [`Shared`]).
    pub fn zeroed(len: usize) -> AlignedBuf {
        if len == 0 {
            // A dangling but aligned pointer: never dereferenced for a zero-length slice.
            let ptr = NonNull::new(ALIGN as *mut u8).unwrap_or(NonNull::dangling());
            return AlignedBuf { ptr, len };
        }
        // Sizes come from models and callers: checked against the memory limits first, and
        // a refusal unwinds to the kernel's or compile's `limits::guard` as a typed error.
        if let Err(r) = limits::reserve(len) {
            limits::refuse(r)
        }
        let system_refused = || {
            limits::release(len);
            limits::refuse(Refused {
                bytes: len,
                limit: 0,
                held: limits::held(),
                which: Which::System,
                at_least: false,
            })
        };
        let Ok(layout) = Layout::from_size_align(len, ALIGN) else { system_refused() };
        crate::stats::record_alloc(len);
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { system_refused() };
        AlignedBuf { ptr, len }
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
    /// must be a multiple of `size_of::<T>()`). Crate-private: bytes written through
    /// [`AlignedBuf::as_mut_slice`] need not be valid `bool`s.
    pub(crate) fn typed_mut<T: Elem>(&mut self) -> &mut [T] {
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
        if self.len != 0 {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.len, ALIGN)) }
            limits::release(self.len);
        }
    }
}

/// A tensor's owned storage: one [`AlignedBuf`] behind a reference count, so clones of a
/// tensor share it. The last owner to drop it gives the buffer, reference count included,
/// back to the [`pool`]: a static-shape model then takes every tensor's storage from there
/// run after run without calling the allocator at all (not even for the count).
pub(crate) struct Shared(Option<Arc<AlignedBuf>>);

impl Shared {
    /// A zeroed buffer of `len` bytes: one of this exact size that an earlier tensor gave
    /// back to the [`pool`] when there is one (zeroed again here), else a fresh one.
    pub(crate) fn zeroed(len: usize) -> Shared {
        if len == 0 {
            return Shared(None);
        }
        let mut kept = pool::take(len);
        // Pooled buffers are unique; one that were not could not be zeroed, so it is not used.
        if let Some(buf) = kept.as_mut().and_then(Arc::get_mut) {
            buf.as_mut_slice().fill(0);
            crate::stats::record_reuse(len);
            return Shared(kept);
        }
        Shared(Some(Arc::new(AlignedBuf::zeroed(len))))
    }

    /// A buffer of `len` bytes that its owner will overwrite whole: one from the [`pool`]
    /// keeps the bytes its last tensor left (not zeroed again, which was a memset of every
    /// tensor every run), a fresh one is zeroed. Either way every byte is initialised, but
    /// it may not be a valid `bool`: only [`crate::Tensor::try_build_full`], which zeroes
    /// bool buffers instead, views one through [`Shared::typed_mut`].
    pub(crate) fn for_overwrite(len: usize) -> Shared {
        if len == 0 {
            return Shared(None);
        }
        match pool::take(len) {
            Some(arc) => {
                crate::stats::record_reuse(len);
                Shared(Some(arc))
            }
            None => Shared(Some(Arc::new(AlignedBuf::zeroed(len)))),
        }
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self.0.as_deref() {
            Some(buf) => buf.as_slice(),
            None => empty_mut(),
        }
    }

    /// The buffer, mutably (`None` for an empty one). Only while this is its one owner,
    /// which every constructor guarantees until the storage is first cloned.
    fn unique(&mut self) -> Option<&mut AlignedBuf> {
        let arc = self.0.as_mut()?;
        Some(Arc::get_mut(arc).expect("a buffer is written only before it is shared"))
    }

    /// The bytes, mutably (see [`Shared::unique`]).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        match self.unique() {
            Some(buf) => buf.as_mut_slice(),
            // Empty, but at an aligned address, so typed views of it cast cleanly.
            None => empty_mut(),
        }
    }

    /// The buffer as elements of `T`, mutably (see [`AlignedBuf::typed_mut`]).
    pub(crate) fn typed_mut<T: Elem>(&mut self) -> &mut [T] {
        match self.unique() {
            Some(buf) => buf.typed_mut(),
            // SAFETY: zero elements at an address aligned to 64 bytes, which satisfies T's
            // alignment; nothing is ever read or written through it.
            None => unsafe { std::slice::from_raw_parts_mut(ALIGN as *mut T, 0) },
        }
    }
}

/// The bytes of every empty tensor: no allocation, at an address aligned for every type.
fn empty_mut() -> &'static mut [u8] {
    // SAFETY: zero bytes at a non-null, 64-byte aligned address: never read or written.
    unsafe { std::slice::from_raw_parts_mut(ALIGN as *mut u8, 0) }
}

impl Clone for Shared {
    fn clone(&self) -> Shared {
        Shared(self.0.clone())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(mut arc) = self.0.take()
            && arc.len != 0
            && Arc::get_mut(&mut arc).is_some()
        {
            // The last owner (no other strong or weak reference): the pool may keep it,
            // else it is freed as `arc` drops here.
            pool::give(arc);
        }
    }
}

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
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
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::{Arc, Mutex};

    use super::AlignedBuf;

    /// At most this many buffers of one size are kept.
    pub const PER_SIZE: usize = 32;

    static LIMIT: AtomicUsize = AtomicUsize::new(64 << 20);
    static POOL: Mutex<Pool> = Mutex::new(Pool { by_len: BTreeMap::new(), bytes: 0 });

    /// Sizes the pool remembers with no buffer kept (a list keeps its capacity, so giving
    /// a buffer back to it does not allocate); past this many, empty lists are dropped.
    const EMPTY_LISTS: usize = 256;

    struct Pool {
        /// Buffers by exact length; every kept `Arc` is unique (no other strong or weak
        /// reference).
        by_len: BTreeMap<usize, Vec<Arc<AlignedBuf>>>,
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
            let Some((&len, list)) = p.by_len.iter_mut().rev().find(|(_, l)| !l.is_empty()) else { break };
            list.pop();
            p.bytes -= len;
        }
        if bytes == 0 {
            p.by_len.clear();
        }
    }

    /// Bytes held by the pool now.
    pub fn pooled_bytes() -> usize {
        POOL.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// A kept buffer of exactly `len` bytes (a unique `Arc`), if there is one.
    pub(super) fn take(len: usize) -> Option<Arc<AlignedBuf>> {
        if len == 0 {
            return None;
        }
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let kept = p.by_len.get_mut(&len)?.pop()?;
        p.bytes -= len;
        Some(kept)
    }

    thread_local! {
        /// Set while this thread builds a session ([`not_kept`]).
        static BUILDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Runs `f` (a session's build) with no buffer freed on this thread kept: what a build
    /// frees are transient copies of weights, sizes no run asks for, which would otherwise sit
    /// in the pool for the life of the process.
    pub fn not_kept<T>(f: impl FnOnce() -> T) -> T {
        /// Restores the outer state, also when `f` unwinds (a refused allocation does).
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                BUILDING.with(|b| b.set(self.0));
            }
        }
        let _restore = Restore(BUILDING.with(|b| b.replace(true)));
        f()
    }

    /// Keeps a unique buffer when the bounds allow; one it does not keep is freed here.
    pub(super) fn give(buf: Arc<AlignedBuf>) {
        if BUILDING.with(std::cell::Cell::get) {
            return;
        }
        let len = buf.len;
        let limit = limit();
        if len > limit / 4 {
            return;
        }
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if p.bytes + len > limit {
            return;
        }
        if !p.by_len.contains_key(&len) && p.by_len.len() >= EMPTY_LISTS {
            p.by_len.retain(|_, l| !l.is_empty());
        }
        let list = p.by_len.entry(len).or_default();
        if list.len() >= PER_SIZE {
            return;
        }
        list.push(buf);
        p.bytes += len;
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}
