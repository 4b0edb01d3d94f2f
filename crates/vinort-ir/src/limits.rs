//! Memory limits: tensor storage a model or a caller asks for is checked before it is
//! allocated, so a request larger than the machine can give is a typed error naming the
//! node and the size, never an allocation abort or an out-of-memory kill.
//!
//! Two limits apply to every buffer vinort allocates for tensor data (and to string
//! tensors):
//!
//! - the **process budget** ([`memory_limit`], [`set_memory_limit`]): all tensor storage vinort
//!   holds at once, pooled buffers included. The default is a quarter of the physical memory.
//! - a **session limit** ([`with_session_limit`]), the largest single buffer: what
//!   `SessionBuilder::memory_limit` sets. A session applies it to the thread running its
//!   kernels while they run.
//!
//! Sizes are computed with checked arithmetic ([`byte_size`]): a shape whose element count
//! overflows `usize` is a request for `usize::MAX` bytes, which every limit refuses.
//!
//! Kernels allocate through infallible constructors (`Tensor::build`, `Tensor::zeros`), so a
//! refused allocation unwinds with a [`Refused`] payload (a quiet panic: the hook this module
//! installs prints nothing for it), and [`guard`], wrapped around each kernel and each
//! compile, turns it into [`Error::MemoryLimit`](crate::Error::MemoryLimit). Any other panic
//! passes through `guard` untouched.
//!
//! ```
//! use vinort_ir::{DType, Tensor, limits};
//! let r = limits::guard(|| {
//!     limits::with_session_limit(Some(1 << 20), || Ok(Tensor::zeros(DType::F32, &[1 << 20])))
//! });
//! let e = r.unwrap_err().to_string();
//! assert!(e.contains("4194304 bytes") && e.contains("1048576"), "{e}");
//! ```

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::error::{Error, Result};

/// Process budget; 0 until first read, then the default unless set.
static LIMIT: AtomicUsize = AtomicUsize::new(0);
/// Bytes of tensor storage alive now (pooled buffers included).
static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SESSION: Cell<Option<usize>> = const { Cell::new(None) };
    /// How many [`guard`]s this thread is inside: a refusal outside any is reported like any
    /// other panic.
    static GUARDS: Cell<usize> = const { Cell::new(0) };
}

/// Which limit refused an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The session's limit on a single buffer.
    Session,
    /// The process budget on all tensor storage at once.
    Process,
    /// The system allocator returned no memory.
    System,
}

/// An allocation that was not made: the payload a refused allocation unwinds with, caught by
/// [`guard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Bytes asked for (`usize::MAX` when the size overflowed).
    pub bytes: usize,
    /// The limit that refused it.
    pub limit: usize,
    /// Bytes already held when it was refused (process budget only).
    pub held: usize,
    /// Which limit.
    pub which: Which,
    /// `bytes` is a lower bound: the element count, checked before the element size is known.
    pub at_least: bool,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = if self.bytes == usize::MAX {
            "more bytes than the address space holds (the size overflows)".to_owned()
        } else {
            let at_least = if self.at_least { "at least " } else { "" };
            format!("{at_least}{} bytes ({})", self.bytes, human(self.bytes))
        };
        match self.which {
            Which::Session => {
                write!(f, "a tensor of {size} is above the session's memory limit of {} bytes", self.limit)
            }
            Which::Process => write!(
                f,
                "a tensor of {size} does not fit the memory limit of {} bytes ({}; {} held now)",
                self.limit,
                human(self.limit),
                human(self.held)
            ),
            Which::System => write!(f, "the system could not allocate a tensor of {size}"),
        }
    }
}

/// `12.0 GiB`-style sizes for messages.
pub fn human(bytes: usize) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..0x10_0000 => format!("{:.1} KiB", b / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", b / 1048576.0),
        _ => format!("{:.1} GiB", b / 1073741824.0),
    }
}

/// The physical memory of this machine in bytes, when the system says (Linux `/proc/meminfo`).
pub fn physical_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The default process budget: a quarter of the physical memory (4 GiB when it cannot be
/// read). Weights mapped from the model file do not count against it, only tensors vinort
/// allocates; a quarter leaves room for the mapped weights, OpenVINO's own memory and a few
/// processes side by side, each failing cleanly instead of the kernel's out-of-memory killer
/// ending one of them.
pub fn default_memory_limit() -> usize {
    physical_memory().map_or(4 << 30, |m| m / 4)
}

/// The process budget: the most tensor storage vinort holds at once.
pub fn memory_limit() -> usize {
    match LIMIT.load(Relaxed) {
        0 => {
            let d = default_memory_limit().max(1);
            // Another thread may have set it meanwhile: keep theirs.
            match LIMIT.compare_exchange(0, d, Relaxed, Relaxed) {
                Ok(_) => d,
                Err(set) => set,
            }
        }
        l => l,
    }
}

/// Sets the process budget (at least one byte).
pub fn set_memory_limit(bytes: usize) {
    LIMIT.store(bytes.max(1), Relaxed);
}

/// Bytes of tensor storage vinort holds now.
pub fn held() -> usize {
    LIVE.load(Relaxed)
}

/// The session limit in force on this thread, if any.
pub fn session_limit() -> Option<usize> {
    SESSION.with(Cell::get)
}

/// The strictest limit a single buffer meets on this thread now: the session limit, or the
/// process budget.
pub fn single_limit() -> usize {
    session_limit().map_or_else(memory_limit, |s| s.min(memory_limit()))
}

/// Runs `f` with `limit` as this thread's session limit (`None` keeps the one in force), and
/// restores the previous one after, also when `f` unwinds.
pub fn with_session_limit<T>(limit: Option<usize>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SESSION.with(|s| s.set(self.0));
        }
    }
    let Some(limit) = limit else { return f() };
    let _restore = Restore(SESSION.with(|s| s.replace(Some(limit))));
    f()
}

/// Bytes of `shape` with elements of `elem` bytes, or `None` when that overflows `usize`.
/// A zero extent anywhere makes it 0, even when the others overflow.
pub fn byte_size(shape: &[usize], elem: usize) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(elem, |a, &d| a.checked_mul(d))
}

/// Checks that a buffer of `bytes` meets both limits, without taking it. For sizes known
/// before anything is allocated (shapes known at build time, random inputs).
pub fn check(bytes: usize) -> Result<(), Refused> {
    if let Some(s) = session_limit()
        && bytes > s
    {
        return Err(Refused { bytes, limit: s, held: 0, which: Which::Session, at_least: false });
    }
    let limit = memory_limit();
    let held = held();
    if bytes > limit.saturating_sub(held) {
        return Err(Refused { bytes, limit, held, which: Which::Process, at_least: false });
    }
    Ok(())
}

/// Counts `bytes` as held if both limits allow it.
pub(crate) fn reserve(bytes: usize) -> Result<(), Refused> {
    if let Some(s) = session_limit()
        && bytes > s
    {
        return Err(Refused { bytes, limit: s, held: 0, which: Which::Session, at_least: false });
    }
    let limit = memory_limit();
    if bytes > limit {
        return Err(Refused { bytes, limit, held: held(), which: Which::Process, at_least: false });
    }
    // Counted first, then checked, so two threads cannot both take the last free bytes.
    let before = LIVE.fetch_add(bytes, Relaxed);
    if before > limit - bytes {
        LIVE.fetch_sub(bytes, Relaxed);
        return Err(Refused { bytes, limit, held: before, which: Which::Process, at_least: false });
    }
    Ok(())
}

/// Gives back bytes counted by [`reserve`].
pub(crate) fn release(bytes: usize) {
    LIVE.fetch_sub(bytes, Relaxed);
}

/// Unwinds with `r` as the payload, for [`guard`] to catch. The panic hook stays quiet for it
/// inside a guard; outside one (an infallible constructor such as `Tensor::zeros` called
/// directly) it reports the refusal like any panic.
pub fn refuse(r: Refused) -> ! {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| match info.payload().downcast_ref::<Refused>() {
            Some(_) if GUARDS.with(Cell::get) > 0 => {}
            Some(r) => {
                let thread = std::thread::current();
                let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
                eprintln!("thread '{}' panicked{at}:\n{r}", thread.name().unwrap_or("<unnamed>"));
            }
            None => previous(info),
        }));
    });
    std::panic::panic_any(r)
}

/// Runs `f`, turning a refused allocation inside it into [`Error::MemoryLimit`]; other panics
/// unwind on. Refusals on other threads reach it when those threads' panics are resumed here
/// (as rayon does for the jobs of a parallel loop).
pub fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            GUARDS.with(|g| g.set(g.get() - 1));
        }
    }
    GUARDS.with(|g| g.set(g.get() + 1));
    let depth = Depth;
    let result = catch_unwind(AssertUnwindSafe(f));
    drop(depth);
    match result {
        Ok(r) => r,
        Err(payload) => match payload.downcast::<Refused>() {
            Ok(r) => Err(Error::MemoryLimit(*r)),
            Err(other) => resume_unwind(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Tensor};

    #[test]
    fn byte_sizes_are_checked() {
        assert_eq!(byte_size(&[2, 3], 4), Some(24));
        assert_eq!(byte_size(&[], 8), Some(8));
        assert_eq!(byte_size(&[1 << 40, 1 << 40], 4), None);
        assert_eq!(byte_size(&[1 << 40, 1 << 40, 0], 4), Some(0));
        assert_eq!(byte_size(&[usize::MAX, 2], 1), None);
    }

    #[test]
    fn a_shape_that_overflows_is_refused_not_wrapped() {
        // 2^32 * 2^32 elements wrap to 0 in unchecked arithmetic.
        let e = guard(|| Ok(Tensor::zeros(DType::F32, &[1 << 32, 1 << 32]))).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit(Refused { bytes: usize::MAX, .. })), "{e}");
        assert!(e.to_string().contains("overflows"), "{e}");
    }

    #[test]
    fn a_request_over_the_process_budget_is_an_error() {
        let too_big = memory_limit() / 2 * 3;
        let e = guard(|| Ok(Tensor::zeros(DType::U8, &[too_big]))).unwrap_err();
        match e {
            Error::MemoryLimit(r) => assert_eq!((r.bytes, r.which), (too_big, Which::Process)),
            other => panic!("{other}"),
        }
        // Strings are checked too.
        let e = guard(|| Ok(Tensor::zeros(DType::String, &[too_big]))).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit(_)), "{e}");
    }

    #[test]
    fn the_session_limit_is_scoped_to_its_closure() {
        let ok = guard(|| with_session_limit(Some(4096), || Ok(Tensor::zeros(DType::F32, &[1024])))).unwrap();
        assert_eq!(ok.shape(), &[1024]);
        let e = guard(|| with_session_limit(Some(4096), || Ok(Tensor::zeros(DType::F32, &[1025])))).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit(Refused { bytes: 4100, limit: 4096, which: Which::Session, .. })));
        assert_eq!(session_limit(), None, "restored after the refusal unwound");
        assert_eq!(Tensor::zeros(DType::F32, &[1025]).shape(), &[1025]);
    }

    #[test]
    fn other_panics_pass_through() {
        let r = catch_unwind(|| guard::<()>(|| panic!("a bug")));
        assert!(r.is_err());
    }
}
