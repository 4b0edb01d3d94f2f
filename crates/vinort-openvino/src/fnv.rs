//! FNV-1a, 64 bits: a hash that stays the same across Rust releases and runs, unlike
//! `DefaultHasher`, for keys and file names that live on disk (probe verdicts, partition files).

/// The FNV-1a 64-bit offset basis.
pub(crate) const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a state, fed piece by piece.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Fnv1a {
    /// Starts from `offset` ([`OFFSET`] for the standard hash).
    pub(crate) fn new(offset: u64) -> Fnv1a {
        Fnv1a(offset)
    }

    /// Feeds bytes.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME));
    }

    /// Feeds a length-prefixed piece, so consecutive pieces cannot run into each other.
    pub(crate) fn update_piece(&mut self, bytes: &[u8]) {
        self.update(&(bytes.len() as u64).to_le_bytes());
        self.update(bytes);
    }

    /// The hash so far.
    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a of `bytes` from `offset`.
pub(crate) fn fnv1a(bytes: &[u8], offset: u64) -> u64 {
    let mut h = Fnv1a::new(offset);
    h.update(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference (draft-eastlake-fnv): FNV-1a 64 of "", "a" and "foobar".
        assert_eq!(fnv1a(b"", OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a", OFFSET), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar", OFFSET), 0x8594_4171_f739_67e8);
        let mut h = Fnv1a::new(OFFSET);
        h.update(b"foo");
        h.update(b"bar");
        assert_eq!(h.finish(), 0x8594_4171_f739_67e8, "feeding in pieces is the same hash");
    }

    #[test]
    fn fnv1a_pieces_keep_their_boundaries() {
        let pieces = |a: &[&[u8]]| {
            let mut h = Fnv1a::new(OFFSET);
            a.iter().for_each(|p| h.update_piece(p));
            h.finish()
        };
        assert_ne!(pieces(&[b"ab", b"c"]), pieces(&[b"a", b"bc"]));
    }
}
