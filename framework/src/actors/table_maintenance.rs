//! Queue-table maintenance: every receiving endpoint looks at the dead rows of the tables its
//! queues live in and reclaims them (PostgreSQL's `VACUUM`) when the server's autovacuum does
//! not: where autovacuum is off for the table, where it has left the table past its own
//! threshold for two of its rounds (falling behind), or where the dead rows reach
//! [`DEAD_ROWS_CEILING`], past which receives slow down before autovacuum's next round. Where
//! autovacuum keeps up, the endpoint leaves the work to it. Reported as the
//! `nimbus_queue_table_dead_rows` gauge, the `nimbus_queue_table_vacuums_total` counter and a
//! log line per vacuum with its reason. Nothing to do on SQLite and SQL Server, whose engines
//! reuse or clean up deleted rows themselves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::periodic::Periodic;
use crate::names::QueueName;
use crate::pipeline::EndpointState;
use crate::transport::TableStats;

/// Dead rows that make a queue table worth vacuuming: a few milliseconds of VACUUM, against
/// receives that slow down as dead rows pile up (2.4–4 ms each after 500,000, against 0.06 ms).
pub(crate) const DEAD_ROWS_THRESHOLD: i64 = 1_000;

/// Dead rows at which the endpoint vacuums even where autovacuum is on and not yet late.
pub(crate) const DEAD_ROWS_CEILING: i64 = 100_000;

/// Why the endpoint vacuums a table, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Fewer dead rows than [`DEAD_ROWS_THRESHOLD`].
    Clean,
    /// Autovacuum is on for the table and not late: its work.
    LeftToAutovacuum,
    /// Autovacuum is off for the table.
    AutovacuumOff,
    /// Autovacuum left the table past its threshold for two of its rounds.
    AutovacuumBehind,
    /// The dead rows reached [`DEAD_ROWS_CEILING`].
    TooManyDeadRows,
}

impl Decision {
    fn vacuums(self) -> bool {
        matches!(
            self,
            Decision::AutovacuumOff | Decision::AutovacuumBehind | Decision::TooManyDeadRows
        )
    }

    fn reason(self) -> &'static str {
        match self {
            Decision::Clean => "few dead rows",
            Decision::LeftToAutovacuum => "autovacuum keeps up",
            Decision::AutovacuumOff => "autovacuum is off for the table",
            Decision::AutovacuumBehind => "autovacuum left it past its threshold for two rounds",
            Decision::TooManyDeadRows => "its dead rows reached 100,000",
        }
    }
}

/// Decides for one table. `over_since` is when the table was first seen past autovacuum's
/// threshold (kept by the caller between looks; cleared here when it is not past it).
pub(crate) fn decide(
    stats: &TableStats,
    over_since: &mut Option<Instant>,
    now: Instant,
) -> Decision {
    let Some(autovacuum_at) = stats.autovacuum_at else {
        *over_since = None;
        return if stats.dead_rows >= DEAD_ROWS_THRESHOLD {
            Decision::AutovacuumOff
        } else {
            Decision::Clean
        };
    };
    if stats.dead_rows <= autovacuum_at {
        *over_since = None;
    } else if over_since.is_none() {
        *over_since = Some(now);
    }
    if stats.dead_rows < DEAD_ROWS_THRESHOLD {
        return Decision::Clean;
    }
    if stats.dead_rows >= DEAD_ROWS_CEILING {
        return Decision::TooManyDeadRows;
    }
    let late = over_since.is_some_and(|since| {
        now.duration_since(since) >= stats.autovacuum_naptime.saturating_mul(2)
    });
    if late {
        Decision::AutovacuumBehind
    } else {
        Decision::LeftToAutovacuum
    }
}

/// The maintenance actor of an endpoint that receives from `queues`.
pub(crate) fn table_maintenance(endpoint: Arc<EndpointState>, queues: Vec<QueueName>) -> Periodic {
    let interval = endpoint.config.table_maintenance_interval;
    let over_since: Arc<Mutex<HashMap<QueueName, Instant>>> = Arc::default();
    Periodic::new(
        "queue table maintenance",
        interval,
        false,
        Arc::new(move || {
            let (endpoint, queues, over_since) =
                (endpoint.clone(), queues.clone(), over_since.clone());
            Box::pin(async move {
                for queue in &queues {
                    let decided = Mutex::new(Decision::Clean);
                    let decide_for_queue = |stats: &TableStats| {
                        let mut tables = over_since.lock().unwrap_or_else(|p| p.into_inner());
                        let mut since = tables.get(queue).copied();
                        let decision = decide(stats, &mut since, Instant::now());
                        match since {
                            Some(since) => tables.insert(queue.clone(), since),
                            None => tables.remove(queue),
                        };
                        *decided.lock().unwrap_or_else(|p| p.into_inner()) = decision;
                        decision.vacuums()
                    };
                    let Some(health) = endpoint
                        .transport
                        .maintain(queue, &decide_for_queue)
                        .await?
                    else {
                        continue;
                    };
                    let labels = [("queue", queue.as_str().to_string())];
                    let remaining = if health.vacuumed {
                        0
                    } else {
                        health.stats.dead_rows
                    };
                    metrics::gauge!("nimbus_queue_table_dead_rows", &labels).set(remaining as f64);
                    let decision = *decided.lock().unwrap_or_else(|p| p.into_inner());
                    if health.vacuumed {
                        over_since
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(queue);
                        crate::pipeline::metrics::count_vacuum(&endpoint.counters, queue.as_str());
                        tracing::info!(
                            queue = %queue,
                            table = %health.table,
                            dead_rows = health.stats.dead_rows,
                            reason = decision.reason(),
                            "vacuumed a queue table"
                        );
                    } else if decision == Decision::LeftToAutovacuum {
                        tracing::debug!(
                            queue = %queue,
                            table = %health.table,
                            dead_rows = health.stats.dead_rows,
                            autovacuum_at = health.stats.autovacuum_at,
                            "dead rows left to the server's autovacuum"
                        );
                    }
                }
                Ok(())
            })
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// PostgreSQL's default `autovacuum_naptime`.
    const NAPTIME: Duration = Duration::from_secs(60);

    fn stats(dead_rows: i64, autovacuum_at: Option<i64>) -> TableStats {
        TableStats {
            dead_rows,
            autovacuum_at,
            autovacuum_naptime: NAPTIME,
        }
    }

    #[test]
    fn without_autovacuum_the_endpoint_vacuums_past_the_threshold() {
        let now = Instant::now();
        let mut since = None;
        assert_eq!(decide(&stats(999, None), &mut since, now), Decision::Clean);
        assert_eq!(
            decide(&stats(1_000, None), &mut since, now),
            Decision::AutovacuumOff
        );
        assert!(since.is_none());
    }

    #[test]
    fn autovacuum_that_keeps_up_is_left_to_do_its_work() {
        let start = Instant::now();
        let mut since = None;
        // A drain leaves 10,000 dead rows, past autovacuum's 50: its work for two rounds.
        let drained = stats(10_000, Some(50));
        assert_eq!(
            decide(&drained, &mut since, start),
            Decision::LeftToAutovacuum
        );
        assert_eq!(since, Some(start));
        let a_round_later = start + NAPTIME;
        assert_eq!(
            decide(&drained, &mut since, a_round_later),
            Decision::LeftToAutovacuum
        );
        // Autovacuum came: the table is back under its threshold, and the clock starts again.
        assert_eq!(
            decide(&stats(10, Some(50)), &mut since, a_round_later),
            Decision::Clean
        );
        assert_eq!(since, None);
    }

    #[test]
    fn autovacuum_that_falls_behind_is_helped() {
        let start = Instant::now();
        let mut since = None;
        let piling_up = stats(5_000, Some(50));
        assert_eq!(
            decide(&piling_up, &mut since, start),
            Decision::LeftToAutovacuum
        );
        let two_rounds_later = start + NAPTIME * 2;
        assert_eq!(
            decide(&piling_up, &mut since, two_rounds_later),
            Decision::AutovacuumBehind
        );
    }

    #[test]
    fn a_huge_pile_is_vacuumed_at_once() {
        let mut since = None;
        let decision = decide(
            &stats(DEAD_ROWS_CEILING, Some(50)),
            &mut since,
            Instant::now(),
        );
        assert_eq!(decision, Decision::TooManyDeadRows);
        assert!(decision.vacuums());
    }

    #[test]
    fn few_dead_rows_past_a_small_threshold_are_not_worth_a_vacuum() {
        let start = Instant::now();
        let mut since = None;
        let few = stats(500, Some(50));
        assert_eq!(decide(&few, &mut since, start), Decision::Clean);
        assert_eq!(
            decide(&few, &mut since, start + NAPTIME * 3),
            Decision::Clean
        );
    }
}
