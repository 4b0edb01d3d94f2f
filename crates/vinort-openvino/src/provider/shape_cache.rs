//! `disable_dynamic_shapes`: one compilation per concrete input-shape signature.
//!
//! The read model is kept as a template, re-shaped to a run's input shapes and compiled once
//! per signature. The compilations are kept in a small least-recently-used cache so varying
//! shapes cannot grow memory without end.

use std::sync::{Arc, Mutex};

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

    /// Inserts as the most recently used, dropping the least recently used beyond capacity.
    pub(super) fn insert(&mut self, key: K, value: V) {
        self.entries.retain(|(k, _)| *k != key);
        self.entries.insert(0, (key, value));
        self.entries.truncate(self.capacity);
    }
}

/// The concrete input shapes a compilation is specialised to.
type ShapeKey = Vec<Vec<usize>>;

/// The read model, re-shaped to each run's concrete input shapes and compiled once per shape
/// signature.
pub(super) struct PerShape {
    pub(super) template: Mutex<OvModel>,
    pub(super) names: Vec<String>,
    pub(super) device: String,
    pub(super) props: Vec<(String, String)>,
    pub(super) cache: Mutex<Lru<ShapeKey, Arc<Compiled>>>,
}

impl PerShape {
    /// The compilation for these input shapes, compiled now when not cached.
    pub(super) fn get(&self, shapes: ShapeKey, pool_size: usize) -> Result<Arc<Compiled>> {
        if let Some(c) = lock(&self.cache).get(&shapes) {
            return Ok(c);
        }
        let compiled = {
            let model = lock(&self.template);
            for (name, shape) in self.names.iter().zip(&shapes) {
                let dims: Vec<(i64, i64)> = shape.iter().map(|d| (*d as i64, *d as i64)).collect();
                model.reshape_input(name, &dims).map_err(to_ir_error)?;
            }
            let core = ffi::core().map_err(to_ir_error)?;
            core.compile(&model, &self.device, &self.props).map_err(to_ir_error)?
        };
        let inputs = compiled.inputs().map_err(to_ir_error)?;
        let outputs = compiled.outputs().map_err(to_ir_error)?;
        // Per-shape partitions hand outputs over as usual (`OvPartition::run_into`).
        let bindable = vec![false; outputs.len()];
        let c = Arc::new(Compiled::new(compiled, inputs, outputs, pool_size, bindable));
        lock(&self.cache).insert(shapes, c.clone());
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

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
