//! Ring all-reduce (Baidu/Horovod): N chunks; N-1 reduce-scatter steps then N-1
//! all-gather steps, each rank sending one chunk of S/N bytes to `rank + 1`.
//! Time alone on a star: 2(N-1)(alpha + S/(N B)).

use super::{Step, StepSchedule};

/// Ring all-reduce.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ring;

impl StepSchedule for Ring {
    fn steps(&self, n: usize) -> usize {
        2 * n.saturating_sub(1)
    }

    fn step(&self, rank: usize, n: usize, step: usize) -> Step {
        let next = (rank + 1) % n;
        let prev = (rank + n - 1) % n;
        // Reduce-scatter step s: send chunk (rank - s), receive chunk (rank - s - 1) and add it.
        // All-gather step s' = s - (n-1): send chunk (rank + 1 - s'), receive chunk (rank - s').
        let (send_chunk, recv_chunk, reduce) = if step < n - 1 {
            ((rank + n - step % n) % n, (rank + 2 * n - step - 1) % n, true)
        } else {
            let s = step - (n - 1);
            ((rank + 1 + n - s % n) % n, (rank + n - s % n) % n, false)
        };
        Step { send_to: Some(next), recv_from: Some(prev), fraction: 1.0 / n as f64, send_chunk, recv_chunk, reduce }
    }

    fn neighbours_only(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Executes the schedule on integer vectors and checks every rank ends with the sum.
    #[test]
    fn ring_schedule_computes_the_sum_on_every_rank() {
        for n in 1..9 {
            let mut data: Vec<Vec<i64>> = (0..n).map(|r| (0..n).map(|c| (r * 10 + c) as i64).collect()).collect();
            let expected: Vec<i64> = (0..n).map(|c| (0..n).map(|r| (r * 10 + c) as i64).sum()).collect();
            for s in 0..Ring.steps(n) {
                let sent: Vec<(usize, usize, i64)> = (0..n)
                    .map(|r| {
                        let st = Ring.step(r, n, s);
                        (st.send_to.unwrap(), st.send_chunk, data[r][st.send_chunk])
                    })
                    .collect();
                for (dst, chunk, value) in sent {
                    let st = Ring.step(dst, n, s);
                    assert_eq!(st.recv_chunk, chunk, "n={n} step={s}");
                    if st.reduce {
                        data[dst][chunk] += value;
                    } else {
                        data[dst][chunk] = value;
                    }
                }
            }
            for r in 0..n {
                assert_eq!(data[r], expected, "n={n} rank={r}");
            }
        }
    }
}
