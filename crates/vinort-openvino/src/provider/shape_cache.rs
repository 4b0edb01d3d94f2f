//! `disable_dynamic_shapes`: one compilation per concrete input-shape signature.
//!
//! The read model is kept as a template, re-shaped to a run's input shapes and compiled once
//! per signature. The compilations are kept in a small least-recently-used cache so varying
//! shapes cannot grow memory without end, and made single-flight: runs that meet one new shape
//! at once wait for one compile instead of each compiling it ([`SingleFlight`]). Compiles of
//! different shapes still take turns, because each reshapes the one template.

use std::sync::{Arc, Mutex, OnceLock};

use vinort_ir::Result;

use super::partition::Compiled;
use crate::error::to_ir_error;
use crate::ffi::{self, OvModel};
use crate::lock;

/// How many shape-specialised compilations a `disable_dynamic_shapes` partition keeps: the
/// cache is bounded (least recently used goes first) so varying shapes cannot grow memory
/// without end.
pub const SHAPE_CACHE: usize = 8;

/// A least-recently-used cache with a fixed capacity; small enough that a vector (most
/// recently used first) beats a map.
pub(super) struct Lru<K, V> {
    entries: Vec<(K, V)>,
    capacity: usize,
}

impl<K: PartialEq, V: Clone> Lru<K, V> {
    pub(super) fn new(capacity: usize) -> Lru<K, V> {
        Lru { entries: Vec::with_capacity(capacity), capacity }
    }

    /// The value for `key`, which becomes the most recently used.
    pub(super) fn get(&mut self, key: &K) -> Option<V> {
        let pos = self.entries.iter().position(|(k, _)| k == key)?;
        let hit = self.entries.remove(pos);
        let v = hit.1.clone();
        self.entries.insert(0, hit);
        Some(v)
    }

    /// Removes `key`.
    pub(super) fn remove(&mut self, key: &K) {
        self.entries.retain(|(k, _)| k != key);
    }

    /// Inserts as the most recently used, dropping the least recently used beyond capacity.
    pub(super) fn insert(&mut self, key: K, value: V) {
        self.entries.retain(|(k, _)| *k != key);
        self.entries.insert(0, (key, value));
        self.entries.truncate(self.capacity);
    }
}

/// The concrete input shapes a compilation is specialised to.
type ShapeKey = Vec<Vec<usize>>;

/// A value being made or made, shared by everyone who asked for its key.
type Cell<V> = Arc<OnceLock<std::result::Result<V, String>>>;

/// An LRU of values made on demand, one make per key at a time: the first caller of a key
/// makes it while later callers of the same key wait for that result instead of making it
/// again (single flight); callers of other keys are not held up by the cache's lock. A failed
/// make is not kept, so the next caller tries again.
pub(super) struct SingleFlight<K, V> {
    cells: Mutex<Lru<K, Cell<V>>>,
}

impl<K: PartialEq + Clone, V: Clone> SingleFlight<K, V> {
    pub(super) fn new(capacity: usize) -> SingleFlight<K, V> {
        SingleFlight { cells: Mutex::new(Lru::new(capacity)) }
    }

    /// The value for `key`, made by `make` unless it is cached or being made.
    pub(super) fn get(
        &self,
        key: &K,
        make: impl FnOnce() -> std::result::Result<V, String>,
    ) -> std::result::Result<V, String> {
        let cell = {
            let mut cells = lock(&self.cells);
            match cells.get(key) {
                Some(c) => c,
                None => {
                    let c: Cell<V> = Arc::new(OnceLock::new());
                    cells.insert(key.clone(), c.clone());
                    c
                }
            }
        };
        let out = cell.get_or_init(make).clone();
        if out.is_err() {
            let mut cells = lock(&self.cells);
            if cells.get(key).is_some_and(|c| Arc::ptr_eq(&c, &cell)) {
                cells.remove(key);
            }
        }
        out
    }
}

/// The read model, re-shaped to each run's concrete input shapes and compiled once per shape
/// signature.
pub(super) struct PerShape {
    pub(super) template: Arc<Mutex<OvModel>>,
    /// What the template references by address (held by each compile).
    pub(super) weights: Vec<vinort_ir::Tensor>,
    pub(super) names: Vec<String>,
    pub(super) device: String,
    pub(super) props: Vec<(String, String)>,
    pub(super) cache: SingleFlight<ShapeKey, Arc<Compiled>>,
}

impl PerShape {
    /// The compilation for these input shapes: cached, being compiled by another run (waited
    /// for), or compiled now.
    pub(super) fn get(&self, shapes: ShapeKey, pool_size: usize) -> Result<Arc<Compiled>> {
        self.cache
            .get(&shapes, || self.compile(&shapes, pool_size).map_err(|e| e.to_string()))
            .map_err(|e| vinort_ir::Error::invalid(format!("compiling for input shapes {shapes:?}: {e}")))
    }

    fn compile(&self, shapes: &ShapeKey, pool_size: usize) -> Result<Arc<Compiled>> {
        let reshape = self
            .names
            .iter()
            .zip(shapes)
            .map(|(name, shape)| (name.clone(), shape.iter().map(|d| (*d as i64, *d as i64)).collect()))
            .collect();
        let core = ffi::core().map_err(to_ir_error)?;
        let target = (self.device.clone(), self.props.clone());
        let compiled =
            super::timed::compile_shared(core, Arc::clone(&self.template), reshape, target, self.weights.clone())?;
        let inputs = compiled.inputs().map_err(to_ir_error)?;
        let outputs = compiled.outputs().map_err(to_ir_error)?;
        // Per-shape partitions hand outputs over as usual (`OvPartition::run_into`).
        let bindable = vec![false; outputs.len()];
        Ok(Arc::new(Compiled::new(compiled, inputs, outputs, pool_size, bindable)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{Lru, SingleFlight};

    /// Eight threads asking for one new key at once make it once and all get it; keys beyond
    /// the capacity evict the least recently used, which is then made again; a failed make is
    /// not kept.
    #[test]
    fn single_flight_makes_each_key_once_and_evicts() {
        let cache = SingleFlight::<u32, usize>::new(2);
        let made = AtomicUsize::new(0);
        let make = |v: usize| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            made.fetch_add(1, Ordering::SeqCst);
            Ok(v)
        };
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| cache.get(&1, || make(10)))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|g| *g == Ok(10)), "{got:?}");
        assert_eq!(made.load(Ordering::SeqCst), 1, "concurrent askers of one key must share one make");
        // Two more keys, asked from two threads.
        std::thread::scope(|s| {
            let a = s.spawn(|| cache.get(&2, || make(20)));
            let b = s.spawn(|| cache.get(&3, || make(30)));
            assert_eq!((a.join().unwrap(), b.join().unwrap()), (Ok(20), Ok(30)));
        });
        assert_eq!(made.load(Ordering::SeqCst), 3);
        // Capacity 2: key 1 was the least recently used and is gone; 3 is kept.
        assert_eq!(cache.get(&3, || make(99)), Ok(30));
        assert_eq!(cache.get(&1, || make(11)), Ok(11), "an evicted key is made again");
        assert_eq!(made.load(Ordering::SeqCst), 4);
        assert_eq!(cache.get(&5, || Err("no".into())), Err("no".to_string()));
        assert_eq!(cache.get(&5, || Ok(50)), Ok(50), "a failure is not cached");
    }

    #[test]
    fn lru_evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get(&"a"), Some(1), "a is now the most recently used");
        lru.insert("c", 3);
        assert_eq!(lru.get(&"b"), None, "b was the least recently used");
        assert_eq!((lru.get(&"a"), lru.get(&"c")), (Some(1), Some(3)));
        lru.insert("c", 4);
        lru.insert("d", 5);
        assert_eq!(lru.get(&"a"), None, "re-inserting c made it recent and a the oldest");
        assert_eq!((lru.get(&"c"), lru.get(&"d")), (Some(4), Some(5)));
        let mut none = Lru::<u8, u8>::new(0);
        none.insert(1, 1);
        assert_eq!(none.get(&1), None);
    }
}
