//! The bounded pool of infer requests a compiled partition runs on.
//!
//! OpenVINO runs several requests of one compiled model at once (as many as its
//! `OPTIMAL_NUMBER_OF_INFER_REQUESTS` / `NUM_STREAMS` say pay off), and each request keeps its
//! bound input and output tensors between runs. The pool creates requests on demand up to its
//! bound and makes callers beyond it wait for one to come back, so concurrent runs never share
//! a request and never create more than the bound. The bookkeeping is generic over the item so
//! it is tested without OpenVINO.

use std::sync::{Condvar, Mutex};

use crate::lock;

struct State<T> {
    free: Vec<T>,
    /// Items alive (free or taken), never more than `max`.
    created: usize,
}

/// Items created on demand, at most `max` of them, handed out exclusively.
pub(super) struct Pool<T> {
    state: Mutex<State<T>>,
    returned: Condvar,
    max: usize,
}

impl<T> Pool<T> {
    /// An empty pool that will hold at most `max` items (at least one).
    pub(super) fn new(max: usize) -> Pool<T> {
        Pool { state: Mutex::new(State { free: vec![], created: 0 }), returned: Condvar::new(), max: max.max(1) }
    }

    /// The bound.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// A free item; else a new one from `create` while fewer than `max` exist; else the next
    /// one given back. A failed `create` frees its place again.
    pub(super) fn take<E>(&self, create: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let mut state = lock(&self.state);
        loop {
            if let Some(item) = state.free.pop() {
                return Ok(item);
            }
            if state.created < self.max {
                state.created += 1;
                // Creating a request can take a while: other runs may take and give back
                // meanwhile.
                drop(state);
                return create().inspect_err(|_| {
                    lock(&self.state).created -= 1;
                    self.returned.notify_one();
                });
            }
            state = self.returned.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Returns a taken item for the next run.
    pub(super) fn give_back(&self, item: T) {
        lock(&self.state).free.push(item);
        self.returned.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn pool_creates_up_to_its_bound_then_reuses() {
        let pool = Pool::new(2);
        let made = AtomicUsize::new(0);
        let create = || Ok::<_, ()>(made.fetch_add(1, Ordering::SeqCst));
        let a = pool.take(create).unwrap();
        let b = pool.take(create).unwrap();
        assert_eq!((a, b), (0, 1));
        pool.give_back(b);
        assert_eq!(pool.take(create), Ok(1), "a free item is reused before creating one");
        pool.give_back(a);
        pool.give_back(1);
        pool.take(create).unwrap();
        pool.take(create).unwrap();
        assert_eq!(made.load(Ordering::SeqCst), 2, "never more than the bound");
        assert_eq!(pool.max(), 2);
    }

    #[test]
    fn pool_at_its_bound_waits_for_an_item_to_come_back() {
        let pool = Arc::new(Pool::new(1));
        let first = pool.take(|| Ok::<_, ()>("first")).unwrap();
        let waiter = {
            let pool = pool.clone();
            std::thread::spawn(move || pool.take(|| Ok::<_, ()>("created past the bound")))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "the second taker waits while the one item is out");
        pool.give_back(first);
        assert_eq!(waiter.join().unwrap(), Ok("first"));
    }

    #[test]
    fn many_threads_never_hold_more_than_the_bound() {
        let pool = Pool::new(3);
        let (held, most, made) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let item = pool.take(|| Ok::<_, ()>(made.fetch_add(1, Ordering::SeqCst))).unwrap();
                        let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        held.fetch_sub(1, Ordering::SeqCst);
                        pool.give_back(item);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 3, "at most 3 held at once, saw {}", most.load(Ordering::SeqCst));
        assert!(made.load(Ordering::SeqCst) <= 3, "at most 3 created, made {}", made.load(Ordering::SeqCst));
    }

    #[test]
    fn pool_failed_create_frees_its_place() {
        let pool = Pool::new(1);
        assert_eq!(pool.take(|| Err::<u8, _>("no request")), Err("no request"));
        assert_eq!(pool.take(|| Ok::<_, &str>(7)), Ok(7), "the failed attempt does not use up the bound");
        assert_eq!(Pool::<u8>::new(0).max(), 1);
    }
}
