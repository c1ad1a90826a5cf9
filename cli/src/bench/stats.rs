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
    /// pgmq's side, where the database has pgmq.
    pub pgmq: Option<Peer>,
}

/// A peer's side (pgmq) of one round.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Peer {
    /// Messages per second.
    pub rate: f64,
    /// CPU per message.
    pub cpu: CpuPerMessage,
}

/// A peer's side over every round that ran it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerSummary {
    /// The median of its rates.
    pub rate: f64,
    /// The median of the rounds' ratios of the framework's rate to the peer's.
    pub ratio: f64,
    /// The lowest of those ratios.
    pub ratio_min: f64,
    /// The highest of those ratios.
    pub ratio_max: f64,
    /// The medians of its CPU per message.
    pub cpu: CpuPerMessage,
}

impl Round {
    /// The framework's rate over pgmq's (1.0: as fast), where pgmq ran.
    pub fn ratio_to_pgmq(&self) -> Option<f64> {
        self.pgmq
            .filter(|p| p.rate > 0.0)
            .map(|p| self.nimbus / p.rate)
    }

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
    /// pgmq's side, over the rounds that ran it (none: pgmq is not installed).
    pub pgmq: Option<PeerSummary>,
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
            pgmq: pgmq_summary(rounds),
        }
    }
}

/// pgmq's medians and the spread of the framework's ratios to it, over the rounds that ran it.
fn pgmq_summary(rounds: &[Round]) -> Option<PeerSummary> {
    let ratios: Vec<f64> = rounds.iter().filter_map(Round::ratio_to_pgmq).collect();
    let peers: Vec<Peer> = rounds.iter().filter_map(|r| r.pgmq).collect();
    if ratios.is_empty() {
        return None;
    }
    Some(PeerSummary {
        rate: median(&peers.iter().map(|p| p.rate).collect::<Vec<_>>()),
        ratio: median(&ratios),
        ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratio_max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cpu: cpu_medians(peers.iter().map(|p| p.cpu)),
    })
}

/// The median process and database CPU per message of one side over its rounds.
fn cpu_medians(rounds: impl Iterator<Item = CpuPerMessage> + Clone) -> CpuPerMessage {
    CpuPerMessage {
        process_us: median_known(rounds.clone().map(|c| c.process_us)),
        db_us: median_known(rounds.clone().map(|c| c.db_us)),
        switches: median_known(rounds.map(|c| c.switches)),
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

/// One comparison's rounds: (baseline, variant) messages per second, e.g. (plain,
/// deduplicated) or (ungrouped, grouped).
#[derive(Default)]
pub struct Pairs(pub Vec<(f64, f64)>);

impl Pairs {
    /// Each round's variant ÷ baseline.
    fn ratios(&self) -> Vec<f64> {
        self.0
            .iter()
            .map(|(baseline, variant)| variant / baseline)
            .collect()
    }

    /// The median ratio, the lowest and highest, and the median rates of baseline and variant.
    pub fn summary(&self) -> (f64, f64, f64, f64, f64) {
        let ratios = self.ratios();
        (
            median(&ratios),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median(&self.0.iter().map(|p| p.0).collect::<Vec<_>>()),
            median(&self.0.iter().map(|p| p.1).collect::<Vec<_>>()),
        )
    }
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
                switches: Some(nimbus / 100.0),
            },
            bare_cpu: CpuPerMessage::default(),
            pgmq: None,
        };
        let s = Summary::of(&[round(90.0, 100.0), round(50.0, 100.0), round(300.0, 200.0)]);
        assert_eq!(s.nimbus, 90.0);
        assert_eq!(s.bare, 100.0);
        assert_eq!(s.ratio, 0.9);
        assert_eq!((s.ratio_min, s.ratio_max), (0.5, 1.5));
        assert_eq!(s.nimbus_cpu.process_us, Some(9.0));
        assert_eq!(
            s.nimbus_cpu.switches,
            Some(0.9),
            "the median of the rounds'"
        );
        assert_eq!((s.nimbus_cpu.db_us, s.bare_cpu.process_us), (None, None));
        assert_eq!(s.pgmq, None, "no round ran pgmq");
    }

    #[test]
    fn pgmq_is_summarised_over_the_rounds_that_ran_it() {
        let round = |nimbus: f64, pgmq: Option<f64>| Round {
            nimbus,
            bare: 100.0,
            nimbus_first: true,
            nimbus_cpu: CpuPerMessage::default(),
            bare_cpu: CpuPerMessage::default(),
            pgmq: pgmq.map(|rate| Peer {
                rate,
                cpu: CpuPerMessage {
                    process_us: Some(rate / 100.0),
                    db_us: None,
                    switches: None,
                },
            }),
        };
        let s = Summary::of(&[
            round(120.0, Some(100.0)),
            round(90.0, None),
            round(300.0, Some(200.0)),
        ]);
        let pgmq = s.pgmq.expect("two rounds ran pgmq");
        assert_eq!(pgmq.rate, 150.0);
        assert_eq!((pgmq.ratio_min, pgmq.ratio_max), (1.2, 1.5));
        assert_eq!(pgmq.ratio, 1.35);
        assert_eq!(pgmq.cpu.process_us, Some(1.5));
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
