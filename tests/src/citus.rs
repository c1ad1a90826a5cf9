//! Tests that only a Citus cluster can run (the `citus` harness, `tests/citus.rs`): a handler
//! that receives on one worker node and sends to a queue on the other commits both in one
//! transaction (Citus's two-phase commit), through SIGKILLs of the worker processes and through a
//! worker node's PostgreSQL stopped in the middle.

use std::collections::HashSet;
use std::time::Duration;

use crate::db::{on_citus, pg_quote};
use crate::suite::{
    business_rows, fill_worker_queue, start_worker, wait_until, wait_while_progressing, Numbered,
    Worker,
};
use crate::{Setup, TestDatabase};

/// How many messages each test moves across the nodes.
const TOTAL: u32 = 1_500;

/// The port of the worker node that holds `db`'s tables (a distributed schema lives on one node).
async fn node_of(db: &TestDatabase) -> i64 {
    let schema = db.schema().expect("a PostgreSQL schema");
    let placed = "FROM citus_shards AS s JOIN pg_class AS c ON c.oid = s.table_name \
                  JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1";
    let nodes = db
        .scalar(
            &format!("SELECT COUNT(DISTINCT s.nodeport) {placed}"),
            &[schema],
        )
        .await;
    assert_eq!(nodes, 1, "one node holds the distributed schema {schema:?}");
    db.scalar(&format!("SELECT MIN(s.nodeport) {placed}"), &[schema])
        .await
}

/// Moves `db`'s schema to the worker node on `port` (writes wait while it moves).
async fn move_schema(db: &TestDatabase, port: i64) {
    let schema = db.schema().expect("a PostgreSQL schema");
    db.execute(&format!(
        "SELECT citus_schema_move('{}'::regnamespace, '127.0.0.1', {port}, 'block_writes')",
        pg_quote(schema).replace('\'', "''")
    ))
    .await;
}

/// Two test schemas on different worker nodes, with the `Worker` queue and a business table
/// `Orders` in the first, `Done` in the second. Returns the schemas, the business table, and the
/// port of each schema's node.
async fn across_two_nodes(setup: Setup) -> (TestDatabase, TestDatabase, String, [i64; 2]) {
    assert!(on_citus(), "runs on a Citus cluster only");
    let here = TestDatabase::new(setup).await;
    let there = TestDatabase::new(setup).await;
    here.admin()
        .create_schema(&["Worker"])
        .await
        .expect("make Worker");
    there
        .admin()
        .create_schema(&["Done"])
        .await
        .expect("make Done");
    let table = here.table("Orders");
    here.execute(&format!(
        "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
    ))
    .await;
    let here_node = node_of(&here).await;
    let mut there_node = node_of(&there).await;
    if there_node == here_node {
        let other = here
            .scalar(
                "SELECT COALESCE(MIN(nodeport), 0) FROM pg_dist_node \
                 WHERE groupid <> 0 AND noderole = 'primary' AND nodeport <> $1::int",
                &[&here_node.to_string()],
            )
            .await;
        assert!(other > 0, "a second worker node: the cluster needs two");
        move_schema(&there, other).await;
        there_node = node_of(&there).await;
        assert_eq!(there_node, other, "the schema moved");
    }
    println!(
        "Worker and the business table on the node of port {here_node}, Done on the node of \
         port {there_node}"
    );
    (here, there, table, [here_node, there_node])
}

/// The address of `Done` in `there`'s schema.
fn done_address(there: &TestDatabase) -> String {
    let schema = there.schema().expect("a PostgreSQL schema");
    format!("Done@[{}]", schema.replace(']', "]]"))
}

/// Starts a worker process that handles `here`'s `Worker` queue, writes its business rows into
/// `table` and sends the numbers to `done` (on the other node).
fn start_across(here: &TestDatabase, worker: &str, table: &str, done: &str) -> Worker {
    start_worker(
        here,
        worker,
        &[
            ("NIMBUS_BUSINESS_TABLE", table),
            ("NIMBUS_DONE_ADDRESS", done),
        ],
    )
}

/// The numbers that reached `Done` in `there`, and whether each reached it once.
async fn check_exactly_once(here: &TestDatabase, there: &TestDatabase, table: &str) {
    let (rows, distinct) = business_rows(here, table).await;
    let done: Vec<u32> = there
        .bodies("Done")
        .await
        .iter()
        .map(|b| {
            serde_json::from_slice::<Numbered>(b)
                .expect("a Numbered body")
                .n
        })
        .collect();
    let unique: HashSet<u32> = done.iter().copied().collect();
    println!(
        "business rows {rows} ({distinct} distinct), numbers on the other node {} ({} distinct), \
         of {TOTAL}",
        done.len(),
        unique.len()
    );
    assert_eq!(
        distinct,
        i64::from(TOTAL),
        "every message has its row: none lost"
    );
    assert_eq!(rows, i64::from(TOTAL), "no message has two rows");
    assert_eq!(
        unique.len(),
        TOTAL as usize,
        "every number crossed: none lost"
    );
    assert_eq!(done.len(), TOTAL as usize, "no number crossed twice");
}

/// Lets `spawn`'s last worker drain `Worker` until every number is on the other node.
async fn drain(here: &TestDatabase, there: &TestDatabase, spawn: impl Fn() -> Worker) {
    let mut last = spawn();
    wait_while_progressing(
        "the last worker drains Worker onto the other node",
        || async {
            let done = there.count("Done").await;
            (
                done,
                here.count("Worker").await == 0 && done >= i64::from(TOTAL),
            )
        },
    )
    .await;
    last.kill();
}

/// Worker processes receive on one node, write a business row there and send to a queue on the
/// other node in the same transaction, and are SIGKILLed at random moments six times; at the end
/// every message has exactly one business row and exactly one copy on the other node.
pub fn sigkill_across_nodes_loses_nothing_and_doubles_nothing(setup: Setup, worker: &str) {
    actix_rt::System::new().block_on(async {
        let (here, there, table, _) = across_two_nodes(setup).await;
        let _sender = fill_worker_queue(&here, TOTAL).await;
        let done = done_address(&there);
        let spawn = || start_across(&here, worker, &table, &done);
        let moments: Vec<u64> = uuid::Uuid::new_v4()
            .as_bytes()
            .iter()
            .take(6)
            .map(|b| 20 + u64::from(*b) * 2)
            .collect();
        let mut progress = Vec::new();
        for wait in &moments {
            let before = there.count("Done").await;
            if before >= i64::from(TOTAL) {
                break;
            }
            let mut worker = spawn();
            wait_until("the worker sends a number across", || async {
                there.count("Done").await > before
            })
            .await;
            tokio::time::sleep(Duration::from_millis(*wait)).await;
            worker.kill(); // SIGKILL, wherever it was: a two-phase commit included
            progress.push(there.count("Done").await);
        }
        println!("killed the worker {moments:?} ms after it started sending; crossed after each kill: {progress:?}");
        assert!(
            progress.first().is_some_and(|p| *p < i64::from(TOTAL)),
            "a worker was killed in the middle of the work"
        );
        drain(&here, &there, spawn).await;
        check_exactly_once(&here, &there, &table).await;
    });
}

/// A schema left on the coordinator (not distributed) is named in a start-up warning with the
/// statement that distributes it; a distributed schema, on the same cluster, gets none.
pub fn a_schema_left_on_the_coordinator_is_warned_about(setup: Setup) {
    actix_rt::System::new().block_on(async {
        assert!(on_citus(), "runs on a Citus cluster only");
        // Starts an endpoint on `db` and returns its start-up warnings about Citus.
        let placement_warnings = async |db: &TestDatabase| -> Vec<String> {
            let bus = db
                .builder("Placed", "placed-1")
                .build()
                .unwrap()
                .start()
                .await
                .unwrap();
            let warnings = bus
                .warnings()
                .iter()
                .filter(|w| w.contains("Citus"))
                .cloned()
                .collect();
            bus.stop().await.unwrap();
            warnings
        };
        let distributed = TestDatabase::new(setup).await;
        assert_eq!(
            placement_warnings(&distributed).await,
            Vec::<String>::new(),
            "a distributed schema"
        );

        let local = TestDatabase::new(setup).await;
        let schema = pg_quote(local.schema().expect("a PostgreSQL schema")).replace('\'', "''");
        local
            .execute(&format!(
                "SELECT citus_schema_undistribute('{schema}'::regnamespace)"
            ))
            .await;
        let warned = placement_warnings(&local).await;
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].contains("not distributed") && warned[0].contains("citus_schema_distribute"),
            "{warned:?}"
        );
        // What the warning says to run distributes it: the next start has no warning.
        local
            .execute(&format!(
                "SELECT citus_schema_distribute('{schema}'::regnamespace)"
            ))
            .await;
        assert_eq!(
            placement_warnings(&local).await,
            Vec::<String>::new(),
            "distributed now"
        );
    });
}

/// The cluster script that can stop and start one node, when the suite runs on the cluster it
/// made (the coordinator on 127.0.0.1:9700).
pub fn cluster_script() -> Option<std::path::PathBuf> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/citus-cluster.sh");
    let made_by_it = std::path::Path::new("/var/tmp/nimbus-citus-9700/coordinator").is_dir();
    (made_by_it && std::env::var_os("NIMBUS_CITUS").is_none()).then_some(script)
}

/// Runs the cluster script with `args`; fails the test when it fails.
fn cluster(script: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new(script)
        .args(args)
        .status()
        .expect("run scripts/citus-cluster.sh");
    assert!(status.success(), "scripts/citus-cluster.sh {args:?} failed");
}

/// A worker process handles across the nodes while the PostgreSQL of the node that receives its
/// sends is stopped at once (`pg_ctl stop -m immediate`: a crash) and started again three seconds
/// later: the handlers' transactions fail and roll back while it is down, nothing is lost, and
/// once it is back (and Citus has settled the two-phase commits it left prepared) every message
/// has exactly one business row and one copy on the other node.
pub fn a_worker_node_stopped_in_the_middle_loses_nothing(setup: Setup, worker: &str) {
    let Some(script) = cluster_script() else {
        panic!("needs the cluster of scripts/citus-cluster.sh on 127.0.0.1:9700");
    };
    actix_rt::System::new().block_on(async {
        let (here, there, table, [_, there_port]) = across_two_nodes(setup).await;
        let _sender = fill_worker_queue(&here, TOTAL).await;
        let done = done_address(&there);
        let spawn = || start_across(&here, worker, &table, &done);
        let mut first = spawn();
        wait_until("the worker has sent 300 numbers across", || async {
            there.count("Done").await >= 300
        })
        .await;
        let node = (there_port - 9700).to_string();
        cluster(&script, &["stop-node", &node]);
        let rows_when_stopped = business_rows(&here, &table).await.0;
        // The outage itself: three seconds with the node down, the worker failing meanwhile.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let rows_while_down = business_rows(&here, &table).await.0 - rows_when_stopped;
        cluster(&script, &["start-node", &node]);
        let back = std::time::Instant::now();
        // A transaction whose commit was under way when the node stopped may still complete
        // on this side: the count says how many did.
        println!(
            "node of port {there_port} stopped after 300 numbers crossed; business rows \
             committed while it was down: {rows_while_down}"
        );
        wait_while_progressing("the worker goes on once the node is back", || async {
            let done = there.count("Done").await;
            (
                done,
                here.count("Worker").await == 0 && done >= i64::from(TOTAL),
            )
        })
        .await;
        println!(
            "every number crossed {:.1} s after the node was back",
            back.elapsed().as_secs_f64()
        );
        first.kill();
        check_exactly_once(&here, &there, &table).await;
    });
}
