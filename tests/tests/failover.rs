//! A PostgreSQL failover during traffic (see `nimbus_conformance::failover`): a primary and a hot
//! standby under pg_auto_failover, started by `scripts/failover-cluster.sh` (or the cluster of
//! `NIMBUS_FAILOVER_URL`), endpoints on a multi-host URL. `.ci/run` runs it.

use nimbus_conformance::failover::{a_failover_during_traffic_loses_nothing, Cluster, TOTAL};

#[test]
#[ignore = "starts a pg_auto_failover cluster (scripts/failover-cluster.sh) or uses NIMBUS_FAILOVER_URL; .ci/run runs it"]
fn a_failover_during_traffic_loses_nothing_and_commits_nothing_twice() {
    let cluster = Cluster::start();
    let recovery =
        a_failover_during_traffic_loses_nothing(&cluster, env!("CARGO_BIN_EXE_crash_worker"));
    println!(
        "failover: {TOTAL} messages, 0 lost, 0 committed twice; the standby was the primary \
         {:.1} s after the failover was asked for, the first message handled on it after {:.1} s",
        recovery.switch_over.as_secs_f64(),
        recovery.first_message.as_secs_f64()
    );
}
