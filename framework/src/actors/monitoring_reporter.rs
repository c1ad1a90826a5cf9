//! The monitoring reporter: every `monitoring_interval` a receiving bus writes one row per queue
//! it receives from into `NimbusMonitoring` (one statement): what it handled, failed, retried
//! and dead-lettered since the last report, its processing and critical times as histograms,
//! and the queue's length at its last peek. A report that cannot be written is carried into
//! the next one. Old reports are deleted by the idle sweep (`monitoring_retention`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use uuid::Uuid;

use super::periodic::Periodic;
use crate::driver::monitoring_statements::ReportRow;
use crate::error::Result;
use crate::pipeline::monitor::QueuePeriod;
use crate::pipeline::EndpointState;

/// The reporter actor of a receiving bus, for the queues it receives from.
pub(crate) fn monitoring_reporter(
    endpoint: Arc<EndpointState>,
    run_id: Uuid,
    queues: Vec<String>,
) -> Option<Periodic> {
    let every = endpoint.config.monitoring_interval?;
    let state = Arc::new(Reporter {
        run_id,
        queues,
        last: Mutex::new(Instant::now()),
        off: AtomicBool::new(false),
    });
    Some(Periodic::new(
        "monitoring report",
        every,
        false,
        Arc::new(move || {
            let (endpoint, state) = (endpoint.clone(), state.clone());
            Box::pin(async move { state.report(&endpoint).await })
        }),
    ))
}

struct Reporter {
    run_id: Uuid,
    queues: Vec<String>,
    /// When the period being collected began.
    last: Mutex<Instant>,
    /// `NimbusMonitoring` is missing: said once, then nothing more is tried.
    off: AtomicBool,
}

impl Reporter {
    async fn report(&self, endpoint: &EndpointState) -> Result<()> {
        if self.off.load(Ordering::Relaxed) {
            return Ok(());
        }
        let periods = endpoint.counters.monitor.take();
        // The period ends now; it starts anew only once this report is written, so a report
        // carried over covers its events' whole time.
        let now = Instant::now();
        let period = now.duration_since(*self.last.lock().unwrap_or_else(|p| p.into_inner()));
        let depths = endpoint
            .counters
            .queue_depths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let identity = &endpoint.config.identity;
        let queues: BTreeSet<&String> = self.queues.iter().chain(periods.keys()).collect();
        let empty = QueuePeriod::default();
        let rows: Vec<ReportRow> = queues
            .into_iter()
            .map(|queue| {
                let p = periods.get(queue).unwrap_or(&empty);
                let us = |t: &crate::transport::monitoring::Timings, percent| {
                    t.percentile(percent)
                        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
                };
                let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                ReportRow {
                    run_id: self.run_id,
                    queue: queue.clone(),
                    application: identity.application.clone(),
                    instance: identity.instance.clone(),
                    period_ms: i64::try_from(period.as_millis()).unwrap_or(i64::MAX),
                    handled: count(p.handled),
                    failed: count(p.failed),
                    retried: count(p.retried),
                    dead_lettered: count(p.dead_lettered),
                    queue_length: depths
                        .get(queue)
                        .map(|&d| i64::try_from(d).unwrap_or(i64::MAX)),
                    processing_p50_us: us(&p.processing, 50.0),
                    processing_p95_us: us(&p.processing, 95.0),
                    critical_p50_us: us(&p.critical, 50.0),
                    critical_p95_us: us(&p.critical, 95.0),
                    processing_times: p.processing.encode(),
                    critical_times: p.critical.encode(),
                }
            })
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        match endpoint.transport.write_monitoring(&rows).await {
            Ok(true) => {
                *self.last.lock().unwrap_or_else(|p| p.into_inner()) = now;
                tracing::trace!(queues = rows.len(), "wrote a monitoring report");
                Ok(())
            }
            Ok(false) => {
                self.off.store(true, Ordering::Relaxed);
                tracing::warn!(schema = %endpoint.config.schema.as_str(), "NimbusMonitoring does not exist (a schema made before it, with auto-create off): this instance's queues have no charts in the console; create it with `nimbus schema apply`");
                Ok(())
            }
            Err(e) => {
                // Carried into the next report: the charts show the events late, not never.
                endpoint.counters.monitor.restore(periods);
                Err(e)
            }
        }
    }
}
