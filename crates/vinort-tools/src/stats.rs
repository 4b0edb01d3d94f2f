//! Timing and latency statistics for `vinort run`, `vinort perf` and the benchmark harness:
//! one percentile rule (nearest rank, so every figure is a latency that was measured and the
//! figures are ordered) and one timed-run loop.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Milliseconds, as every report prints them.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `p`-th percentile (nearest rank) of values sorted ascending; NaN when there are none.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    sorted[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1]
}

/// The `p`-th percentile (nearest rank) of `v`, in any order; NaN when empty.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    nearest_rank(&s, p)
}

/// Latency statistics in ms; serializes as `{"min", "median", "p90", "p99", "max", "mean"}`
/// rounded by [`crate::json::rounded`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Fastest run.
    #[serde(serialize_with = "crate::json::rounded")]
    pub min: f64,
    /// 50th percentile.
    #[serde(serialize_with = "crate::json::rounded")]
    pub median: f64,
    /// 90th percentile.
    #[serde(serialize_with = "crate::json::rounded")]
    pub p90: f64,
    /// 99th percentile.
    #[serde(serialize_with = "crate::json::rounded")]
    pub p99: f64,
    /// Slowest run.
    #[serde(serialize_with = "crate::json::rounded")]
    pub max: f64,
    /// Arithmetic mean.
    #[serde(serialize_with = "crate::json::rounded")]
    pub mean: f64,
}

impl Latency {
    /// From latencies sorted ascending (all NaN when there are none).
    pub fn of(sorted: &[f64]) -> Latency {
        let pct = |p| nearest_rank(sorted, p);
        Latency {
            min: pct(0.0),
            median: pct(50.0),
            p90: pct(90.0),
            p99: pct(99.0),
            max: pct(100.0),
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
        }
    }
}

/// Times `runs` runs, one latency (ms) each. Allocates nothing inside the loop, so heap
/// counters read around it count the runs only.
pub fn time_runs<E>(runs: usize, mut run: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
    let mut latencies = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        run()?;
        latencies.push(ms(t.elapsed()));
    }
    Ok(latencies)
}

/// Times the first run (ms), then makes `warmup` untimed runs.
pub fn first_then_warm<E>(warmup: usize, mut run: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let t = Instant::now();
    run()?;
    let first = ms(t.elapsed());
    for _ in 0..warmup {
        run()?;
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_are_ordered_samples() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let l = Latency::of(&v);
        assert_eq!((l.min, l.median, l.p90, l.p99, l.max), (1.0, 100.0, 180.0, 198.0, 200.0));
        let one = Latency::of(&[4.0]);
        assert_eq!((one.min, one.median, one.p99, one.max, one.mean), (4.0, 4.0, 4.0, 4.0, 4.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 50.0), 2.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn latency_serializes_in_order_and_rounded() {
        let l = Latency::of(&[1.0, 2.0, 3.123456789]);
        assert_eq!(
            crate::json::to_line(&l),
            r#"{"min": 1, "median": 2, "p90": 3.123457, "p99": 3.123457, "max": 3.123457, "mean": 2.041152}"#
        );
    }

    #[test]
    fn timed_runs_stop_at_the_first_error() {
        let mut n = 0;
        assert_eq!(time_runs(3, || Ok::<(), ()>(())).unwrap().len(), 3);
        assert_eq!(
            time_runs(5, || {
                n += 1;
                if n == 2 { Err("second") } else { Ok(()) }
            }),
            Err("second")
        );
        assert_eq!(first_then_warm(2, || Ok::<(), ()>(())).map(|f| f >= 0.0), Ok(true));
    }
}
