//! Deadlines for work a provider cannot interrupt: a compile that may never end must not hold
//! a session build forever.
//!
//! OpenVINO's C API has no way to cancel a compile, and a hostile or merely unlucky model can
//! make its graph passes spin for minutes (`shared/regressions/openvino-compile-spins.onnx`).
//! [`within`] runs such a call on a thread of its own and waits at most the deadline in force
//! ([`compile_timeout`]): on expiry the caller gets [`Expired`] and goes on (the provider
//! refuses the partition, the session re-partitions), while the call keeps running on its
//! thread until it returns, holding what was moved into it. It can do no harm there: its
//! result is dropped unseen, and everything it reads was moved into it, so nothing it uses is
//! freed under it. What it costs: the CPU time of the call (a spinning compile keeps one core
//! busy until the process exits) and the memory it holds; [`abandoned`] counts such calls.
//!
//! The deadline is per call, and a session build also has it as a budget for all its calls
//! together ([`with_build_budget`]): a model that splits into pieces OpenVINO spins on one
//! after another cannot make a build wait the deadline once per piece (the black-box run of
//! issue 33 found one: a deadline passed, then the next piece started a fresh one). Once the
//! budget is spent, later calls of that build expire at once, without starting. A session sets
//! the deadline for its build with [`with_compile_timeout`] (`SessionBuilder::compile_timeout`);
//! elsewhere (a compile per input shape at run time) it is [`DEFAULT_COMPILE_TIMEOUT`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use vinort_ir::deadline::{within, with_compile_timeout};
//! let quick = with_compile_timeout(Some(Duration::from_secs(5)), || within("add", || 2 + 2));
//! assert_eq!(quick.unwrap(), 4);
//! let slow = with_compile_timeout(Some(Duration::from_millis(10)), || {
//!     within("sleep", || std::thread::sleep(Duration::from_millis(500)))
//! });
//! assert!(slow.unwrap_err().to_string().contains("did not finish within 10 ms"));
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The deadline of one uninterruptible call when nobody set another: generous, since a real
/// model's compile on a loaded machine takes seconds, not minutes.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

thread_local! {
    /// `None`: the default. `Some(ZERO)`: no deadline.
    static TIMEOUT: Cell<Option<Duration>> = const { Cell::new(None) };
    /// When the session build on this thread has spent its budget ([`with_build_budget`]).
    static BUDGET_END: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Calls that passed their deadline and have not returned yet.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// The deadline in force on this thread: `None` when there is none (it was set to zero).
pub fn compile_timeout() -> Option<Duration> {
    let t = TIMEOUT.with(Cell::get).unwrap_or(DEFAULT_COMPILE_TIMEOUT);
    (!t.is_zero()).then_some(t)
}

/// Runs `f` with `timeout` as this thread's deadline (`Some(Duration::ZERO)`: none; `None`:
/// keep the one in force) and restores the previous one after, also when `f` unwinds.
pub fn with_compile_timeout<T>(timeout: Option<Duration>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Duration>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TIMEOUT.with(|t| t.set(self.0));
        }
    }
    let Some(timeout) = timeout else { return f() };
    let _restore = Restore(TIMEOUT.with(|t| t.replace(Some(timeout))));
    f()
}

/// Runs `f` (a session build) with the deadline in force as the budget of all the calls it
/// makes together; inner builds (a control-flow body's) share the outer one's.
pub fn with_build_budget<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET_END.with(|b| b.set(self.0));
        }
    }
    let (Some(limit), None) = (compile_timeout(), BUDGET_END.with(Cell::get)) else { return f() };
    let _restore = Restore(BUDGET_END.with(|b| b.replace(Instant::now().checked_add(limit))));
    f()
}

/// How many calls passed their deadline and are still running in this process.
pub fn abandoned() -> usize {
    ABANDONED.load(Ordering::Relaxed)
}

/// A call that did not return within its deadline (it goes on running on its own thread).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} did not finish within {} ({})", human(*limit), why(*.budget_spent, *.started))]
pub struct Expired {
    /// What was called.
    pub what: String,
    /// The deadline it had.
    pub limit: Duration,
    /// True when the build's budget ran out (before the call's own deadline).
    pub budget_spent: bool,
    /// False when the budget was spent before the call could start.
    pub started: bool,
}

fn why(budget_spent: bool, started: bool) -> &'static str {
    match (budget_spent, started) {
        (true, false) => "not started: the session build's budget for all its compiles was spent",
        (true, true) => {
            "the session build's budget for all its compiles ran out; it keeps running on its own thread until it returns"
        }
        _ => "the compile deadline; it keeps running on its own thread until it returns",
    }
}

/// `90 s`, `1.5 s`, `250 ms`.
pub fn human(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        let s = d.as_secs_f64();
        if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Runs `f` within the deadline in force ([`compile_timeout`]): inline when there is none,
/// else on a thread of its own. A panic in `f` reaches the caller as a panic.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<T, Expired> {
    let Some(limit) = compile_timeout() else { return Ok(f()) };
    let left = BUDGET_END.with(Cell::get).map(|end| end.saturating_duration_since(Instant::now()));
    let (wait, budget_spent) = match left {
        Some(left) if left < limit => (left, true),
        _ => (limit, false),
    };
    if wait.is_zero() {
        tracing::warn!(what, limit = %human(limit), "call not started: the build's compile budget is spent");
        return Err(Expired { what: what.to_owned(), limit, budget_spent, started: false });
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // Taken back when no thread can be had.
    let work = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    let theirs = std::sync::Arc::clone(&work);
    let spawned = std::thread::Builder::new().name("vinort-deadline".into()).spawn(move || {
        let f = theirs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(f) = f else { return };
        let out = f();
        if tx.send(out).is_err() {
            // The caller gave up on this call: it counted it before letting go of the channel.
            ABANDONED.fetch_sub(1, Ordering::Relaxed);
        }
    });
    let Ok(handle) = spawned else {
        // No thread to be had: the call runs here, without a deadline, rather than not at all.
        tracing::warn!(what, "no thread for a deadline: running without one");
        let f = work.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        return Ok(f.expect("the closure was not taken: its thread never started")());
    };
    drop(work);
    match rx.recv_timeout(wait) {
        Ok(out) => {
            let _ = handle.join();
            Ok(out)
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // Counted before the channel closes, so the thread's decrement comes after.
            ABANDONED.fetch_add(1, Ordering::Relaxed);
            drop(rx);
            tracing::warn!(what, limit = %human(limit), budget_spent, "call abandoned at its deadline");
            Err(Expired { what: what.to_owned(), limit, budget_spent, started: true })
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends its result before it ends"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// A build's calls share one budget: a call past what is left of it expires then (saying
    /// the budget was spent), and once it is gone a call expires without starting.
    #[test]
    fn a_build_budget_bounds_all_its_calls_together() {
        let nap = |ms| move || std::thread::sleep(Duration::from_millis(ms));
        with_compile_timeout(Some(Duration::from_millis(300)), || {
            with_build_budget(|| {
                within("first", nap(150)).unwrap_or_else(|e| panic!("{e}"));
                let started = Instant::now();
                let e =
                    within("second", nap(400)).err().unwrap_or_else(|| panic!("the second call outlived the budget"));
                assert!(
                    e.budget_spent && started.elapsed() < Duration::from_millis(290),
                    "{e} after {:?}",
                    started.elapsed()
                );
                assert!(e.to_string().contains("budget"), "{e}");
                let ran = Arc::new(AtomicBool::new(false));
                let flag = Arc::clone(&ran);
                let e = within("third", move || flag.store(true, Ordering::Relaxed)).err();
                assert!(e.is_some_and(|e| e.budget_spent && !e.started), "the third call was not refused");
                std::thread::sleep(Duration::from_millis(20));
                assert!(!ran.load(Ordering::Relaxed), "a call past the budget started");
            })
        });
        // Outside a build, each call has the whole deadline again.
        with_compile_timeout(Some(Duration::from_millis(300)), || {
            within("after", nap(150)).unwrap_or_else(|e| panic!("{e}"));
            within("after again", nap(200)).unwrap_or_else(|e| panic!("{e}"));
        });
    }
}
