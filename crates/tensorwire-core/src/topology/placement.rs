//! Where the ranks of a job sit on the fabric's hosts.
//!
//! - `packed`: rank r on host r (consecutive ranks share a machine, then a leaf or rail
//!   group): what a scheduler that packs jobs does, and the default;
//! - `spread`: ranks dealt round-robin over the outermost level first (groups or leaves,
//!   then nodes, then GPUs): rank r's digits in the reversed layout become its host's
//!   digits, so consecutive ranks land as far apart as the fabric allows;
//! - `random`: a seeded uniform permutation (Fisher-Yates on a PCG stream).

use rand::{Rng, SeedableRng};

use crate::error::{Error, Result};

/// The placements, as written in specs.
pub const PLACEMENTS: &[&str] = &["packed", "spread", "random"];

/// Host of each of the `ranks` ranks laid out as `layout` (radices innermost first,
/// product = ranks), for placement `kind`.
pub fn placement(kind: &str, layout: &[usize], seed: u64) -> Result<Vec<usize>> {
    let ranks: usize = layout.iter().product();
    match kind {
        "packed" => Ok((0..ranks).collect()),
        "spread" => Ok((0..ranks)
            .map(|r| {
                // Digits of r with the outermost level varying fastest ...
                let mut x = r;
                let mut digits = vec![0; layout.len()];
                for d in (0..layout.len()).rev() {
                    digits[d] = x % layout[d];
                    x /= layout[d];
                }
                // ... read as a host number in the layout (innermost first).
                digits.iter().zip(layout).rev().fold(0, |acc, (&d, &radix)| acc * radix + d)
            })
            .collect()),
        "random" => {
            let mut hosts: Vec<usize> = (0..ranks).collect();
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed ^ 0x9E37_79B9_7F4A_7C15);
            for i in (1..ranks).rev() {
                hosts.swap(i, rng.gen_range(0..=i));
            }
            Ok(hosts)
        }
        _ => Err(Error::invalid(
            "placement",
            format!("unknown placement {kind:?}; choose one of {}", PLACEMENTS.join(", ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(p: &[usize]) -> bool {
        let mut seen = vec![false; p.len()];
        p.iter().all(|&h| h < p.len() && !std::mem::replace(&mut seen[h], true))
    }

    #[test]
    fn spread_deals_consecutive_ranks_to_different_leaves() {
        let p = placement("spread", &[4, 3], 0).unwrap();
        // 3 leaves of 4 hosts: ranks 0, 1, 2 on leaves 0, 1, 2; rank 3 back on leaf 0.
        assert_eq!(&p[..4], &[0, 4, 8, 1]);
        assert!(is_permutation(&p));
        let leaves: Vec<usize> = p.iter().map(|h| h / 4).collect();
        assert!(leaves.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn every_placement_is_a_seeded_permutation() {
        for layout in [vec![8], vec![4, 3], vec![8, 4, 2]] {
            for kind in PLACEMENTS {
                let p = placement(kind, &layout, 7).unwrap();
                assert!(is_permutation(&p), "{kind} {layout:?}");
                assert_eq!(p, placement(kind, &layout, 7).unwrap());
            }
        }
        assert_ne!(placement("random", &[64], 1).unwrap(), placement("random", &[64], 2).unwrap());
        assert_eq!(placement("scattered", &[4], 0).unwrap_err().field(), "placement");
    }
}
