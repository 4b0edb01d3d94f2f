//! Owned tensor storage: 64-byte aligned, zeroed buffers, and the bounded pool that takes a
//! dropped buffer back so a static-shape model reuses its buffers run after run.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::dtype::Elem;
use crate::limits::{self, Refused, Which};

/// A 64-byte aligned, zero-initialised heap buffer: `len` bytes in use of the `cap` it was
/// allocated with (a pooled buffer may serve a tensor somewhat smaller than it).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
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
            return AlignedBuf { ptr, len, cap: 0 };
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
        AlignedBuf { ptr, len, cap: len }
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
        if self.cap != 0 {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.cap, ALIGN)) }
            limits::release(self.cap);
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
            buf.len = len;
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
        // Pooled buffers are unique, so their length can be set; one that were not is not used.
        let mut kept = pool::take(len);
        if let Some(buf) = kept.as_mut().and_then(Arc::get_mut) {
            buf.len = len;
            crate::stats::record_reuse(len);
            return Shared(kept);
        }
        Shared(Some(Arc::new(AlignedBuf::zeroed(len))))
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
            && arc.cap != 0
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

/// A bounded pool of tensor buffers that tensors gave back, by size.
///
/// A static-shape model asks for the same buffer sizes on every run, so after the first run
/// the Cpu provider's intermediate and output tensors come from here instead of the system
/// allocator (no page faults, no allocator locks): vinort's counterpart of ONNX Runtime's
/// memory arena. A request takes the buffer given back most recently among those of its size
/// up to half as large again ([`SLACK`]): that one is likeliest still in the cache, where one
/// of the exact size was often last written a whole run ago. The pool is bounded, unlike a
/// cache that grows with every shape it sees: it keeps at most [`limit`] bytes in all (64 MiB
/// unless [`set_limit`] says otherwise), at most [`PER_SIZE`] buffers of one size, and no
/// buffer over a quarter of the limit. A buffer it cannot keep is freed.
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

    /// A request for `len` bytes may take a kept buffer of up to `len + len / SLACK` bytes.
    pub const SLACK: usize = 2;

    static LIMIT: AtomicUsize = AtomicUsize::new(64 << 20);
    static POOL: Mutex<Pool> = Mutex::new(Pool { by_cap: BTreeMap::new(), bytes: 0, clock: 0 });

    /// Sizes the pool remembers with no buffer kept (a list keeps its capacity, so giving
    /// a buffer back to it does not allocate); past this many, empty lists are dropped.
    const EMPTY_LISTS: usize = 256;

    struct Pool {
        /// Buffers by allocated size, each with when it was given back (later ones last);
        /// every kept `Arc` is unique (no other strong or weak reference).
        by_cap: BTreeMap<usize, Vec<(u64, Arc<AlignedBuf>)>>,
        bytes: usize,
        /// Counts the buffers given back.
        clock: u64,
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
            let Some((&cap, list)) = p.by_cap.iter_mut().rev().find(|(_, l)| !l.is_empty()) else { break };
            list.pop();
            p.bytes -= cap;
        }
        if bytes == 0 {
            p.by_cap.clear();
        }
    }

    /// Bytes held by the pool now.
    pub fn pooled_bytes() -> usize {
        POOL.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// The kept buffer (a unique `Arc`) of `len` to `len + len / SLACK` bytes given back
    /// last, if there is one; the caller sets its length.
    pub(super) fn take(len: usize) -> Option<Arc<AlignedBuf>> {
        if len == 0 {
            return None;
        }
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let most = len.saturating_add(len / SLACK);
        let (cap, _) = p
            .by_cap
            .range(len..=most)
            .filter_map(|(cap, list)| list.last().map(|(at, _)| (*cap, *at)))
            .max_by_key(|(_, at)| *at)?;
        let (_, kept) = p.by_cap.get_mut(&cap)?.pop()?;
        p.bytes -= cap;
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
        let cap = buf.cap;
        let limit = limit();
        if cap > limit / 4 {
            return;
        }
        let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if p.bytes + cap > limit {
            return;
        }
        if !p.by_cap.contains_key(&cap) && p.by_cap.len() >= EMPTY_LISTS {
            p.by_cap.retain(|_, l| !l.is_empty());
        }
        p.clock += 1;
        let at = p.clock;
        let list = p.by_cap.entry(cap).or_default();
        if list.len() >= PER_SIZE {
            return;
        }
        list.push((at, buf));
        p.bytes += cap;
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{AlignedBuf, Shared, pool};

    /// Gives a fresh buffer of `cap` bytes to the pool and returns its address.
    fn give(cap: usize) -> usize {
        let buf = Arc::new(AlignedBuf::zeroed(cap));
        let at = buf.as_slice().as_ptr() as usize;
        pool::give(buf);
        at
    }

    /// A request takes the buffer given back last among those of its size up to half as
    /// large again, seen at the requested length; one too large stays kept, and a fresh
    /// buffer comes when none fits. (Sizes no other test of this binary asks for.)
    #[test]
    fn a_request_takes_the_latest_buffer_that_fits() {
        let exact = give(90_001);
        let too_big = give(200_001);
        let larger = give(120_001);
        let first = Shared::for_overwrite(90_001);
        assert_eq!((first.as_slice().as_ptr() as usize, first.as_slice().len()), (larger, 90_001));
        let second = Shared::zeroed(90_001);
        assert_eq!(second.as_slice().as_ptr() as usize, exact);
        assert!(second.as_slice().iter().all(|b| *b == 0));
        let third = Shared::for_overwrite(90_001);
        assert!(![exact, larger, too_big].contains(&(third.as_slice().as_ptr() as usize)));
        // The larger buffer goes back at its own size and serves its own size again.
        drop(first);
        let again = Shared::for_overwrite(120_001);
        assert_eq!((again.as_slice().as_ptr() as usize, again.as_slice().len()), (larger, 120_001));
        let big = Shared::for_overwrite(200_001);
        assert_eq!(big.as_slice().as_ptr() as usize, too_big);
    }
}
