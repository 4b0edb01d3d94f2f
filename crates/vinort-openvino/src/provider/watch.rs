//! The watcher: one thread that cancels the OpenVINO requests of runs that must stop.
//!
//! A run with a stop flag or a deadline registers its request for the time `infer` runs. The
//! watcher sleeps while nothing is registered, and otherwise looks every [`POLL`] at each
//! registered run's [`RunContext::stop_requested`]; a run that must stop gets its request
//! cancelled, again on every look until it deregisters. Registration and cancellation share one lock, so a request is never
//! cancelled after its run has deregistered (and the request may be reused or freed).

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use vinort_ir::{RunContext, StopReason};

use crate::ffi::Canceller;
use crate::lock;

/// How often the watcher looks at the registered runs.
const POLL: Duration = Duration::from_millis(2);

struct Entry {
    id: u64,
    canceller: Canceller,
    ctx: RunContext,
    /// Set when the watcher cancelled the run.
    stopped: Option<StopReason>,
}

#[derive(Default)]
struct Registry {
    entries: Vec<Entry>,
    next_id: u64,
}

struct Watcher {
    registry: Mutex<Registry>,
    wake: Condvar,
}

fn watcher() -> &'static Watcher {
    static W: OnceLock<&'static Watcher> = OnceLock::new();
    W.get_or_init(|| {
        let w: &'static Watcher =
            Box::leak(Box::new(Watcher { registry: Mutex::new(Registry::default()), wake: Condvar::new() }));
        let spawned = std::thread::Builder::new().name("vinort-openvino-watch".into()).spawn(move || w.run());
        if let Err(e) = spawned {
            // Runs still end, only not early: said once, not a failure of the run.
            tracing::warn!(error = %e, "could not start the thread that cancels stopped OpenVINO runs");
        }
        w
    })
}

impl Watcher {
    fn run(&self) {
        let mut reg = lock(&self.registry);
        loop {
            while reg.entries.is_empty() {
                reg = self.wake.wait(reg).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            for e in reg.entries.iter_mut() {
                // Cancelled again on every look until the run deregisters: a cancel that
                // arrives before OpenVINO has marked the request busy is ignored by it.
                if let Some(r) = e.stopped.or_else(|| e.ctx.stop_requested()) {
                    // SAFETY: the entry is registered, so its run is inside `infer` and its
                    // request alive; deregistering takes this lock, which is held.
                    let outcome = unsafe { e.canceller.cancel() };
                    if e.stopped.is_none() {
                        tracing::debug!(reason = %r, ok = outcome.is_ok(), tag = e.ctx.tag(), "cancelling an OpenVINO request");
                    }
                    e.stopped = Some(r);
                }
            }
            drop(reg);
            std::thread::sleep(POLL);
            reg = lock(&self.registry);
        }
    }
}

/// A run being watched; [`Watch::finish`] ends the watch.
pub(super) struct Watch {
    id: u64,
}

impl Watch {
    /// Watches a run on the request `canceller` cancels, until [`Watch::finish`].
    pub(super) fn start(canceller: Canceller, ctx: RunContext) -> Watch {
        let w = watcher();
        let mut reg = lock(&w.registry);
        let id = reg.next_id;
        reg.next_id += 1;
        reg.entries.push(Entry { id, canceller, ctx, stopped: None });
        drop(reg);
        w.wake.notify_one();
        Watch { id }
    }

    /// Ends the watch: why the watcher cancelled the run, if it did.
    pub(super) fn finish(self) -> Option<StopReason> {
        self.remove()
    }

    fn remove(&self) -> Option<StopReason> {
        let mut reg = lock(&watcher().registry);
        let at = reg.entries.iter().position(|e| e.id == self.id)?;
        reg.entries.swap_remove(at).stopped
    }
}

impl Drop for Watch {
    /// A run that unwinds out of `infer` is deregistered too: the watcher never touches a
    /// request whose run has ended.
    fn drop(&mut self) {
        self.remove();
    }
}
