//! Rates, medians and percentiles: the arithmetic of the report, with no I/O.

use std::time::Duration;

use super::cpu::CpuPerMessage;

/// `count` messages over `elapsed`, per second (an instant counts as a microsecond, so the rate
/// stays finite).
pub fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-6)
}

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The median of the known values of `values`; `None` when none is known.
pub fn median_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let known: Vec<f64> = values.into_iter().flatten().collect();
    (!known.is_empty()).then(|| median(&known))
}

/// One round of one workload: both sides' rates and CPU per message, and which ran first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Messages per second through the framework.
    pub nimbus: f64,
    /// Messages per second through the bare SQL.
    pub bare: f64,
    /// Whether the framework ran first in this round.
    pub nimbus_first: bool,
    /// CPU per message through the framework.
    pub nimbus_cpu: CpuPerMessage,
    /// CPU per message through the bare SQL.
    pub bare_cpu: CpuPerMessage,
}

impl Round {
    /// The framework's rate over the bare SQL's (1.0: as fast).
    pub fn ratio(&self) -> f64 {
        if self.bare > 0.0 {
            self.nimbus / self.bare
        } else {
            0.0
        }
    }
}

/// A workload over every round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median of the framework's rates.
    pub nimbus: f64,
    /// The median of the bare SQL's rates.
    pub bare: f64,
    /// The median of the per-round ratios (not the ratio of the medians).
    pub ratio: f64,
    /// The lowest per-round ratio.
    pub ratio_min: f64,
    /// The highest per-round ratio.
    pub ratio_max: f64,
    /// The medians of the framework's CPU per message (each over the rounds that know it).
    pub nimbus_cpu: CpuPerMessage,
    /// The medians of the bare SQL's CPU per message.
    pub bare_cpu: CpuPerMessage,
}

impl Summary {
    /// The medians and the spread of `rounds`.
    pub fn of(rounds: &[Round]) -> Summary {
        let pick = |f: fn(&Round) -> f64| rounds.iter().map(f).collect::<Vec<_>>();
        let ratios = pick(Round::ratio);
        Summary {
            nimbus: median(&pick(|r| r.nimbus)),
            bare: median(&pick(|r| r.bare)),
            ratio: median(&ratios),
            ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratio_max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            nimbus_cpu: cpu_medians(rounds.iter().map(|r| r.nimbus_cpu)),
            bare_cpu: cpu_medians(rounds.iter().map(|r| r.bare_cpu)),
        }
    }
}

/// The median process and database CPU per message of one side over its rounds.
fn cpu_medians(rounds: impl Iterator<Item = CpuPerMessage> + Clone) -> CpuPerMessage {
    CpuPerMessage {
        process_us: median_known(rounds.clone().map(|c| c.process_us)),
        db_us: median_known(rounds.map(|c| c.db_us)),
    }
}

/// p50, p99 and max of latencies in microseconds, in milliseconds (zeros when empty).
pub fn percentiles_ms(latencies_us: &[u64]) -> [f64; 3] {
    let mut sorted = latencies_us.to_vec();
    sorted.sort_unstable();
    let at = |p: f64| match sorted.len() {
        0 => 0.0,
        n => sorted[((n - 1) as f64 * p) as usize] as f64 / 1000.0,
    };
    [at(0.50), at(0.99), at(1.0)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn a_summary_takes_the_median_of_the_ratios_and_their_spread() {
        let round = |nimbus, bare| Round {
            nimbus,
            bare,
            nimbus_first: true,
            nimbus_cpu: CpuPerMessage {
                process_us: Some(nimbus / 10.0),
                db_us: None,
            },
            bare_cpu: CpuPerMessage::default(),
        };
        let s = Summary::of(&[round(90.0, 100.0), round(50.0, 100.0), round(300.0, 200.0)]);
        assert_eq!(s.nimbus, 90.0);
        assert_eq!(s.bare, 100.0);
        assert_eq!(s.ratio, 0.9);
        assert_eq!((s.ratio_min, s.ratio_max), (0.5, 1.5));
        assert_eq!(s.nimbus_cpu.process_us, Some(9.0));
        assert_eq!((s.nimbus_cpu.db_us, s.bare_cpu.process_us), (None, None));
    }

    #[test]
    fn rates_and_percentiles_stay_finite() {
        assert_eq!(per_second(10, Duration::from_secs(2)), 5.0);
        assert!(per_second(10, Duration::ZERO).is_finite());
        assert_eq!(percentiles_ms(&[]), [0.0, 0.0, 0.0]);
        let l: Vec<u64> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(percentiles_ms(&l), [50.0, 99.0, 100.0]);
    }
}
