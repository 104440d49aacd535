//! Activation broadcast of partial collectives (seed 002 section 4.1.1): any rank may be
//! the initiator, and the activation spreads along a binomial tree rooted at it. With
//! ranks renumbered relative to the initiator (v = rank - initiator mod N), node v
//! receives from v - 2^j (2^j its highest set bit) and forwards to v + 2^k for every
//! 2^k > v with v + 2^k < N: ceil(log2 N) rounds, N - 1 messages, any N. The union over
//! all initiators is the recursive-doubling pattern of the seed.

/// Ranks that `rank` forwards the activation to when `initiator` started it.
pub fn activation_children(rank: usize, n: usize, initiator: usize) -> Vec<usize> {
    let v = (rank + n - initiator % n) % n;
    let mut out = Vec::new();
    let mut bit = 1;
    while v + bit < n {
        if bit > v {
            out.push((v + bit + initiator) % n);
        }
        bit <<= 1;
    }
    out
}

/// The rank `rank` receives the activation from (`None` for the initiator).
pub fn activation_parent(rank: usize, n: usize, initiator: usize) -> Option<usize> {
    let v = (rank + n - initiator % n) % n;
    if v == 0 {
        return None;
    }
    let high = 1 << (usize::BITS - 1 - v.leading_zeros());
    Some((v - high + initiator) % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_is_reached_once_from_any_initiator() {
        for n in 1..40 {
            for initiator in 0..n {
                let mut reached = vec![0; n];
                reached[initiator] += 1;
                for r in 0..n {
                    for c in activation_children(r, n, initiator) {
                        reached[c] += 1;
                        assert_eq!(activation_parent(c, n, initiator), Some(r));
                    }
                }
                assert!(reached.iter().all(|&x| x == 1), "n={n} initiator={initiator}");
                assert_eq!(activation_parent(initiator, n, initiator), None);
            }
        }
    }
}
