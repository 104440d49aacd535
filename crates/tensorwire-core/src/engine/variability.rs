//! Compute-time variability: stragglers and load imbalance as per-worker, per-iteration
//! multipliers of compute time. Draws come from a seeded PCG stream that lives in the
//! simulation state, one stream per worker, so results are reproducible from the seed
//! and do not depend on the order in which events happen to draw.

use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal, Normal};
use rand_pcg::Pcg64;

use crate::error::{Error, Result};

/// Largest spread of `normal:CV` and `lognormal:SIGMA`. Measured stragglers are far inside
/// it (coefficients of variation of a few percent to 0.5); `lognormal:700` drew multipliers
/// of 0 and `normal:1e308` ones past the simulation horizon.
pub const MAX_SPREAD: f64 = 5.0;

/// How compute time varies across workers and iterations.
#[derive(Debug, Clone, PartialEq)]
pub enum Variability {
    /// Every worker computes in exactly the workload's time.
    None,
    /// Multiplier ~ Normal(1, cv), clamped to at least 0.05.
    Normal {
        /// Coefficient of variation (standard deviation / mean).
        cv: f64,
    },
    /// Multiplier ~ LogNormal(mu, sigma) with mean 1.
    LogNormal {
        /// Standard deviation of the underlying normal.
        sigma: f64,
    },
    /// Fixed multiplier per worker (1.0 = nominal, 2.0 = twice as slow).
    Slowdowns(Vec<f64>),
    /// Multiplier drawn uniformly from measured values (e.g. iteration times / their mean).
    Empirical(Vec<f64>),
    /// In every iteration one worker, drawn uniformly (the same draw whoever asks, seeded),
    /// computes `factor` times as long; the others take the workload's time. The load
    /// imbalance Li et al. 2019 (seed 002, section 6.2) inject: one random process per step.
    OneAtRandom {
        /// The drawn worker's multiplier (2.0: twice as slow).
        factor: f64,
    },
}

impl Variability {
    /// Checks parameters against `workers`.
    pub fn validate(&self, workers: usize) -> Result<()> {
        match self {
            Variability::None => Ok(()),
            Variability::Normal { cv } if (0.0..=MAX_SPREAD).contains(cv) => Ok(()),
            Variability::LogNormal { sigma } if (0.0..=MAX_SPREAD).contains(sigma) => Ok(()),
            Variability::Slowdowns(s) if s.len() == workers && s.iter().all(|x| x.is_finite() && *x > 0.0) => Ok(()),
            Variability::Empirical(v) if !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0) => Ok(()),
            Variability::OneAtRandom { factor } if factor.is_finite() && *factor > 0.0 => Ok(()),
            Variability::OneAtRandom { factor } => Err(Error::invalid(
                "stragglers",
                format!("one worker's multiplier is {factor}; it must be a finite number > 0 (2 = twice as slow)"),
            )),
            Variability::Empirical(_) => {
                Err(Error::invalid("stragglers", "an empirical distribution needs at least one multiplier, all > 0"))
            }
            Variability::Slowdowns(s) if s.len() != workers => Err(Error::invalid(
                "stragglers",
                format!("needs one multiplier > 0 per worker ({workers}), got {}", s.len()),
            )),
            Variability::Slowdowns(s) => {
                let (i, x) = s.iter().enumerate().find(|(_, x)| !(x.is_finite() && **x > 0.0)).unwrap_or((0, &0.0));
                Err(Error::invalid(
                    "stragglers",
                    format!("worker {i}'s multiplier is {x}; each must be a finite number > 0 (1 = the model's time)"),
                ))
            }
            _ => Err(Error::invalid(
                "stragglers",
                format!(
                    "the spread must be a number from 0 to {MAX_SPREAD} (a log-normal's sigma of 5 already draws a median \
                     multiplier of 4e-6 and a mean of 1 from rare huge ones)"
                ),
            )),
        }
    }

    /// True when every worker always computes alike.
    pub fn is_uniform(&self) -> bool {
        match self {
            Variability::None => true,
            Variability::Normal { cv } => *cv == 0.0,
            Variability::LogNormal { sigma } => *sigma == 0.0,
            Variability::Slowdowns(s) => s.iter().all(|&x| x == s[0]),
            Variability::Empirical(v) => v.iter().all(|&x| x == v[0]),
            Variability::OneAtRandom { factor } => *factor == 1.0,
        }
    }
}

/// Per-worker multiplier streams, and what each worker drew (for the compute per iteration
/// a report gives: [`Sampler::compute_factor`]).
pub(crate) struct Sampler {
    kind: Variability,
    streams: Vec<Pcg64>,
    /// `OneAtRandom`: the seed of each iteration's draw of the slow worker.
    seed: u64,
    /// Per worker, the multipliers drawn so far in iteration order (empty without variability).
    drawn: Vec<Vec<f64>>,
}

impl Sampler {
    pub fn new(kind: Variability, workers: usize, seed: u64) -> Self {
        let streams =
            (0..workers as u64).map(|w| Pcg64::seed_from_u64(seed ^ w.wrapping_mul(0x9E37_79B9_7F4A_7C15))).collect();
        let drawn = if kind == Variability::None { Vec::new() } else { vec![Vec::new(); workers] };
        Sampler { kind, streams, seed, drawn }
    }

    /// Multiplier for worker `rank`'s next iteration.
    pub fn draw(&mut self, rank: usize) -> f64 {
        let m = self.sample(rank);
        if let Some(d) = self.drawn.get_mut(rank) {
            d.push(m);
        }
        m
    }

    /// What the compute of one iteration took against the workload's, over the measured
    /// iterations (every iteration after the first, or the first alone): where workers wait
    /// for each other (`synchronous`), the slowest worker's multiplier, averaged over the
    /// iterations; where each runs at its own pace (partial collectives), every worker's
    /// multiplier averaged. 1 without variability.
    pub fn compute_factor(&self, synchronous: bool, measured: usize) -> f64 {
        // Workers that drew (a folded run simulates one rank for all where they are alike),
        // over the `measured` iterations: in a multi-job run a job goes on past them as
        // background load, and those draws are not its measurement.
        let drew: Vec<&Vec<f64>> = self.drawn.iter().filter(|d| !d.is_empty()).collect();
        let k = drew.iter().map(|d| d.len()).min().unwrap_or(0).min(measured);
        if k == 0 {
            return 1.0;
        }
        let iterations = if k > 1 { 1..k } else { 0..1 };
        let per_iteration = |i: usize| {
            let all = drew.iter().map(|d| d[i]);
            if synchronous {
                all.fold(0.0, f64::max)
            } else {
                all.sum::<f64>() / drew.len() as f64
            }
        };
        let len = iterations.len() as f64;
        iterations.map(per_iteration).sum::<f64>() / len
    }

    fn sample(&mut self, rank: usize) -> f64 {
        match &self.kind {
            Variability::None => 1.0,
            Variability::Normal { cv } => {
                Normal::new(1.0, *cv).expect("validated").sample(&mut self.streams[rank]).max(0.05)
            }
            Variability::LogNormal { sigma } => {
                LogNormal::new(-sigma * sigma / 2.0, *sigma).expect("validated").sample(&mut self.streams[rank])
            }
            Variability::Slowdowns(s) => s[rank],
            Variability::Empirical(v) => v[rand::Rng::gen_range(&mut self.streams[rank], 0..v.len())],
            Variability::OneAtRandom { factor } => {
                // Iteration i (this rank's draws so far) slows the worker drawn for i, a draw
                // of its own so that every rank agrees whenever it asks.
                let i = self.drawn[rank].len() as u64;
                let mut draw =
                    Pcg64::seed_from_u64(self.seed ^ 0x0AE5_7A11_0000_0002 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                if rand::Rng::gen_range(&mut draw, 0..self.streams.len()) == rank {
                    *factor
                } else {
                    1.0
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_at_random_slows_exactly_one_worker_each_iteration_evenly_and_reproducibly() {
        let (workers, iterations, factor) = (4, 4000, 3.0);
        let draws = |seed| {
            let mut s = Sampler::new(Variability::OneAtRandom { factor }, workers, seed);
            // Ranks ask in any order (here last to first, then interleaved): the same draws.
            let mut out = vec![vec![0.0; workers]; iterations];
            for (i, row) in out.iter_mut().enumerate() {
                let order: Vec<usize> = if i % 2 == 0 { (0..workers).rev().collect() } else { (0..workers).collect() };
                for r in order {
                    row[r] = s.draw(r);
                }
            }
            out
        };
        let a = draws(7);
        assert_eq!(a, draws(7));
        assert_ne!(a, draws(8));
        let mut slowed = vec![0usize; workers];
        for row in &a {
            assert_eq!(row.iter().filter(|&&m| m == factor).count(), 1, "{row:?}");
            assert_eq!(row.iter().filter(|&&m| m == 1.0).count(), workers - 1);
            slowed[row.iter().position(|&m| m == factor).unwrap()] += 1;
        }
        // Each worker about a quarter of the iterations (binomial, sd 27 of 1000).
        assert!(slowed.iter().all(|&n| (850..1150).contains(&n)), "{slowed:?}");
        // Blocking waits for the slow one every iteration; each worker's own pace averages
        // 1 + (factor - 1) / workers.
        let mut s = Sampler::new(Variability::OneAtRandom { factor }, workers, 7);
        for _ in 0..iterations {
            for r in 0..workers {
                s.draw(r);
            }
        }
        assert_eq!(s.compute_factor(true, iterations), factor);
        let own = s.compute_factor(false, iterations);
        assert!((own - (1.0 + (factor - 1.0) / workers as f64)).abs() < 0.02, "{own}");
    }

    #[test]
    fn one_at_random_needs_a_finite_multiplier_above_0() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Variability::OneAtRandom { factor: bad }.validate(4).unwrap_err();
            assert_eq!(e.field(), "stragglers");
        }
        assert!(Variability::OneAtRandom { factor: 1.0 }.is_uniform());
        assert!(!Variability::OneAtRandom { factor: 1.5 }.is_uniform());
    }
}
