//! Integer arithmetic the engine and the fabrics share.

/// Greatest common divisor (Euclid); `gcd(a, 0) = a`. Strides coprime with a count visit
/// every residue (parameter servers' rounds, the flow estimate's sample of ranks), and a
/// rail fabric's spines pair with its nodes by it.
pub(crate) fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::gcd;

    #[test]
    fn gcd_of_a_few_pairs() {
        assert_eq!([gcd(12, 18), gcd(7, 0), gcd(0, 7), gcd(1024, 3), gcd(64, 16)], [6, 7, 7, 1, 16]);
    }
}
