//! A hash map for the engine's integer keys (operation ids, task references): one
//! multiplication per key instead of SipHash's rounds. The keys are the engine's own
//! (never attacker-chosen), and iteration order is never observed, so results stay
//! deterministic. Measured: SipHash was 11% of an unfolded ring run (docs/simulator.md).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing: the golden-ratio multiplier spreads consecutive keys over the top
/// bits, which the map's control bytes use.
#[derive(Default)]
pub(crate) struct MulHasher(u64);

pub(crate) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(GOLDEN);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(GOLDEN);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A `HashMap` hashed by [`MulHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MulHasher>>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn consecutive_ids_differ_in_the_top_bits_the_map_probes_with() {
        // hashbrown takes 7 control bits from the top of the hash: an identity hash of
        // small ids would put them all in one control class.
        let build = BuildHasherDefault::<MulHasher>::default();
        let tops: std::collections::HashSet<u64> = (0u64..128).map(|id| build.hash_one(id) >> 57).collect();
        assert!(tops.len() > 64, "{} distinct top-7-bit values for 128 ids", tops.len());
        let mut map: FastMap<(usize, usize), u32> = FastMap::default();
        for (i, key) in [(0, 1), (1, 0), (7, 3)].into_iter().enumerate() {
            map.insert(key, i as u32);
        }
        assert_eq!((map[&(0, 1)], map[&(1, 0)], map[&(7, 3)]), (0, 1, 2));
    }
}
