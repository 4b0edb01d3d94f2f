//! What a kernel derives from its input shapes alone (window tables, output shapes, loop
//! geometry), kept for the last shapes seen: a static-shape model works it out on its first
//! run and then reuses it, so a steady-state run neither recomputes nor allocates it.

use std::sync::{Arc, Mutex};

use smallvec::SmallVec;
use vinort_ir::Result;

/// The extents a derivation was made from (inline up to 16: two rank-7 shapes and more).
type Key = SmallVec<[usize; 16]>;

/// One cached derivation, keyed by the extents it was made from.
pub(crate) struct PerShape<T> {
    last: Mutex<Option<(Key, Arc<T>)>>,
}

impl<T> Default for PerShape<T> {
    fn default() -> Self {
        PerShape { last: Mutex::new(None) }
    }
}

impl<T> PerShape<T> {
    /// The derivation for `key`: the kept one when `key` equals the last key, else `make`'s
    /// (kept in its place when it succeeds). Errors are not kept.
    pub(crate) fn get(&self, key: &[usize], make: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, v)) = last.as_ref()
            && k.as_slice() == key
        {
            return Ok(v.clone());
        }
        let v = Arc::new(make()?);
        *last = Some((SmallVec::from_slice(key), v.clone()));
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derivation_is_made_once_per_key_and_errors_are_not_kept() {
        let cache = PerShape::<usize>::default();
        let made = std::cell::Cell::new(0);
        let get = |key: &[usize]| {
            cache
                .get(key, || {
                    made.set(made.get() + 1);
                    if key.is_empty() { Err(vinort_ir::Error::invalid("no key")) } else { Ok(key.iter().sum()) }
                })
                .map(|v| *v)
        };
        assert_eq!(get(&[1, 2]).unwrap(), 3);
        assert_eq!(get(&[1, 2]).unwrap(), 3);
        assert_eq!(get(&[2, 2]).unwrap(), 4);
        assert!(get(&[]).is_err());
        assert_eq!(get(&[2, 2]).unwrap(), 4);
        // [1,2] once, [2,2] once, [] once: the error did not displace [2,2].
        assert_eq!(made.get(), 3);
    }
}
