//! CPU time per message: the benchmark process's own, and the database server's when it runs on
//! this machine, read from /proc (Linux; elsewhere both are unknown and reported as such).
//!
//! * **Process**: `utime + stime` of `/proc/self/stat`, every thread of this process, living or
//!   exited (SQLite's work is in here: it runs inside the process).
//! * **Database** (PostgreSQL on this machine): `utime + stime + cutime + cstime` of the
//!   server's processes — its postmaster (the parent of the benchmark's own backend, found with
//!   `pg_backend_pid()`), its background writers and every backend; the `c…` fields are the
//!   postmaster's reaped children, so a backend that exits between two samples (a pool closing a
//!   connection) still counts. Another cluster on the machine stays out; when the postmaster
//!   cannot be found, every process whose `comm` is `postgres` counts. Everything the server
//!   does meanwhile counts too: measure on an otherwise idle server.
//!
//! Both are in clock ticks (`getconf CLK_TCK`, 100 when it cannot be asked), so a sample is
//! good to ±1 tick (10 ms): measure over seconds, not milliseconds.
//!
//! * **Context switches** of this process (`getrusage(RUSAGE_SELF)`: voluntary and involuntary,
//!   every thread, living or exited): each is a thread that went to sleep waiting (a socket, a
//!   lock, a channel) or was put aside, and the kernel's work around it is in the process's
//!   `stime`. A framework that hands a message between threads shows it here first.

use std::path::Path;

use nimbus::admin::Database;

use super::Target;

/// A CPU reading in clock ticks; `None` where it cannot be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// This process.
    process: Option<u64>,
    /// The database server's processes.
    database: Option<u64>,
    /// This process's context switches so far.
    switches: Option<u64>,
}

/// CPU microseconds per message over one side of one workload; `None` when unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuPerMessage {
    /// The benchmark process (framework or bare SQL, plus SQLite when it is the database).
    pub process_us: Option<f64>,
    /// The database server (PostgreSQL on this machine).
    pub db_us: Option<f64>,
    /// The benchmark process's context switches per message (voluntary and involuntary).
    pub switches: Option<f64>,
}

/// Where the database's CPU time comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbCpu {
    /// The `postgres` processes of this machine.
    Postgres,
    /// SQLite: the database runs inside the benchmark process, its CPU is the process's.
    InProcess,
    /// Not measured, and why.
    Unavailable(String),
}

impl DbCpu {
    /// Its stable name in the JSON report.
    pub fn key(&self) -> &'static str {
        match self {
            DbCpu::Postgres => "postgres_processes",
            DbCpu::InProcess => "in_process",
            DbCpu::Unavailable(_) => "unavailable",
        }
    }

    /// What the database column means, for people.
    pub fn note(&self) -> String {
        match self {
            DbCpu::Postgres => {
                "db = every postgres process on this machine (run on an otherwise idle server)"
                    .to_string()
            }
            DbCpu::InProcess => {
                "db = n/a: SQLite runs inside the benchmark process, its CPU is in the process \
                 column"
                    .to_string()
            }
            DbCpu::Unavailable(why) => format!("db = n/a: {why}"),
        }
    }
}

/// Reads CPU time for the benchmark: how, and in which unit.
#[derive(Debug, Clone)]
pub struct CpuClock {
    /// Clock ticks per second.
    ticks_per_s: f64,
    /// Where the database's CPU time comes from.
    pub db: DbCpu,
    /// The PostgreSQL server's postmaster, whose process tree is the database's CPU; `None`:
    /// every `postgres` process.
    postmaster: Option<u32>,
}

impl CpuClock {
    /// The clock for `target`: the database's CPU is read on PostgreSQL when its host is this
    /// machine and its processes are visible.
    pub fn new(target: &Target) -> CpuClock {
        let db = match target.backend {
            "sqlite" => DbCpu::InProcess,
            "postgres" if !is_local(&target.url) => {
                DbCpu::Unavailable("the PostgreSQL server is not on this machine".to_string())
            }
            "postgres" if postgres_ticks(Path::new("/proc"), None).is_none() => DbCpu::Unavailable(
                "no postgres process is visible on this machine (another container or user?)"
                    .to_string(),
            ),
            "postgres" => DbCpu::Postgres,
            _ => DbCpu::Unavailable("not measured on SQL Server".to_string()),
        };
        CpuClock {
            ticks_per_s: ticks_per_second(),
            db,
            postmaster: None,
        }
    }

    /// On PostgreSQL, narrows the database's CPU to the server `admin` is connected to: its
    /// postmaster (the parent of `admin`'s backend) and the postmaster's children. Leaves every
    /// `postgres` process counted when that cannot be found.
    pub async fn find_server(&mut self, admin: &Database) {
        if self.db != DbCpu::Postgres {
            return;
        }
        if let Ok(backend) = admin.query_scalar("SELECT pg_backend_pid()", &[]).await {
            self.postmaster = u32::try_from(backend)
                .ok()
                .and_then(|pid| postmaster_of(Path::new("/proc"), pid));
        }
    }

    /// What the database column means, for people.
    pub fn note(&self) -> String {
        match (&self.db, self.postmaster) {
            (DbCpu::Postgres, Some(pid)) => format!(
                "db = the PostgreSQL server's processes (postmaster {pid} and its children; run \
                 on an otherwise idle server)"
            ),
            (db, _) => db.note(),
        }
    }

    /// CPU time so far. The database is read first and last around the process (see
    /// [`CpuClock::after`]), so scanning /proc stays out of the process's figure.
    pub fn before(&self) -> Sample {
        let database = self.database_ticks();
        Sample {
            process: process_ticks(),
            database,
            switches: context_switches(),
        }
    }

    /// CPU time so far, at the end of what [`CpuClock::before`] started.
    pub fn after(&self) -> Sample {
        let (process, switches) = (process_ticks(), context_switches());
        Sample {
            process,
            database: self.database_ticks(),
            switches,
        }
    }

    /// The database's ticks, where they are measured.
    fn database_ticks(&self) -> Option<u64> {
        match self.db {
            DbCpu::Postgres => postgres_ticks(Path::new("/proc"), self.postmaster),
            _ => None,
        }
    }

    /// CPU microseconds per message between `before` and `after`, over `messages` messages.
    pub fn per_message(&self, before: Sample, after: Sample, messages: usize) -> CpuPerMessage {
        let per = |b: Option<u64>, a: Option<u64>| {
            let ticks = a?.checked_sub(b?)?;
            Some(ticks as f64 * 1e6 / self.ticks_per_s / messages.max(1) as f64)
        };
        let switches = after
            .switches
            .zip(before.switches)
            .and_then(|(a, b)| a.checked_sub(b))
            .map(|n| n as f64 / messages.max(1) as f64);
        CpuPerMessage {
            process_us: per(before.process, after.process),
            db_us: per(before.database, after.database),
            switches,
        }
    }
}

/// This process's context switches so far, voluntary and involuntary, over every thread it ever
/// had (`getrusage(RUSAGE_SELF)`); `None` where the call fails.
fn context_switches() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a whole `rusage` into the pointer it is given, which points at
    // one; it is read only when the call says it succeeded.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let count = |n: libc::c_long| u64::try_from(n).ok();
    Some(count(usage.ru_nvcsw)? + count(usage.ru_nivcsw)?)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux's usual value, when it cannot be
/// asked).
fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// The fields of a `/proc/<pid>/stat` line: its `comm` (between the parentheses, which may hold
/// spaces and parentheses itself) and the fields after it, from `state` on.
fn stat_fields(stat: &str) -> Option<(&str, Vec<&str>)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let rest = stat.get(close + 1..)?.split_whitespace().collect();
    Some((comm, rest))
}

/// The sum of the fields `from..=to` (numbered as in `man 5 proc`: `utime` is 14, `stime` 15,
/// `cutime` 16, `cstime` 17) of a stat line's fields after `comm` (which start at field 3).
fn sum_fields(rest: &[&str], from: usize, to: usize) -> Option<u64> {
    (from..=to)
        .map(|n| rest.get(n - 3).and_then(|f| f.parse::<u64>().ok()))
        .sum()
}

/// This process's `utime + stime`, in ticks.
fn process_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat_fields(&stat)?;
    sum_fields(&rest, 14, 15)
}

/// The postmaster of the PostgreSQL backend `backend` under `proc` (a /proc tree): its parent,
/// when both are `postgres` processes.
fn postmaster_of(proc: &Path, backend: u32) -> Option<u32> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
        match stat_fields(&stat)? {
            // `ppid` is field 4, the second after `comm`.
            ("postgres", rest) => rest.get(1)?.parse().ok(),
            _ => None,
        }
    };
    let postmaster = parent(backend)?;
    // The postmaster is a `postgres` process itself (its parent is anything).
    parent(postmaster).map(|_| postmaster)
}

/// The `utime + stime + cutime + cstime` of every `postgres` process under `proc` (a /proc
/// tree) — with `postmaster`, only that one and its children — in ticks; `None` when there is
/// none. A process that exits while it is read is skipped.
fn postgres_ticks(proc: &Path, postmaster: Option<u32>) -> Option<u64> {
    let mut total = None;
    for entry in std::fs::read_dir(proc).ok()?.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(("postgres", rest)) = stat_fields(&stat) {
            let in_tree = match postmaster {
                None => true,
                Some(pm) => {
                    name.to_string_lossy() == pm.to_string()
                        || rest.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pm)
                }
            };
            if !in_tree {
                continue;
            }
            if let Some(ticks) = sum_fields(&rest, 14, 17) {
                total = Some(total.unwrap_or(0) + ticks);
            }
        }
    }
    total
}

/// Whether the PostgreSQL URL `url` names a server on this machine: no host (a local socket),
/// a socket directory, a loopback address, `localhost`, or this machine's host name.
fn is_local(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (authority, query) = match after_scheme.split_once('?') {
        Some((before, query)) => (before, query),
        None => (after_scheme, ""),
    };
    let authority = authority.split('/').next().unwrap_or_default();
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let query_host = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("host="))
        .unwrap_or_default();
    let this_machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let local = |host: &str| {
        let host = host.trim();
        let name = match host.strip_prefix('[') {
            Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        };
        name.is_empty()
            || name.starts_with('/')
            || name.starts_with("%2F")
            || name.starts_with("%2f")
            || name.eq_ignore_ascii_case("localhost")
            || name.starts_with("127.")
            || name == "::1"
            || name.eq_ignore_ascii_case(this_machine.trim())
    };
    let named = if query_host.is_empty() {
        hosts
    } else {
        query_host
    };
    named.split(',').all(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_comm_with_spaces_and_parentheses() {
        let line = "42 (post gres) (x)) S 1 2 3 4 5 6 7 8 9 10 100 20 3 4 20 0";
        let (comm, rest) = stat_fields(line).expect("fields");
        assert_eq!(comm, "post gres) (x)");
        assert_eq!(sum_fields(&rest, 14, 15), Some(120));
        assert_eq!(sum_fields(&rest, 14, 17), Some(127));
        assert_eq!(sum_fields(&rest, 14, 40), None, "missing fields");
    }

    #[test]
    fn this_process_has_cpu_time() {
        if cfg!(target_os = "linux") {
            assert!(process_ticks().is_some());
        }
    }

    #[test]
    fn a_thread_that_sleeps_is_a_context_switch() {
        let before = context_switches().expect("getrusage");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let after = context_switches().expect("getrusage");
        assert!(after > before, "{before} -> {after}");
    }

    #[test]
    fn the_server_is_its_postmaster_and_the_postmasters_children() {
        let proc = std::env::temp_dir().join(format!("nimbus-proc-{}", std::process::id()));
        let stat = |pid: u32, comm: &str, ppid: u32, utime: u64| {
            let dir = proc.join(pid.to_string());
            std::fs::create_dir_all(&dir).expect("dir");
            let line = format!("{pid} ({comm}) S {ppid} 0 0 0 0 0 0 0 0 0 {utime} 0 0 0 20 0");
            std::fs::write(dir.join("stat"), line).expect("stat");
        };
        stat(10, "postgres", 1, 1); // this cluster's postmaster
        stat(11, "postgres", 10, 2); // its backend
        stat(20, "postgres", 1, 100); // another cluster's postmaster
        stat(21, "postgres", 20, 200); // and backend
        stat(30, "bash", 1, 1000);
        assert_eq!(postmaster_of(&proc, 11), Some(10));
        assert_eq!(postmaster_of(&proc, 30), None, "not a postgres backend");
        assert_eq!(postgres_ticks(&proc, Some(10)), Some(3));
        assert_eq!(postgres_ticks(&proc, None), Some(303));
        let _ = std::fs::remove_dir_all(&proc);
    }

    #[test]
    fn local_and_remote_servers() {
        for url in [
            "postgres://postgres@127.0.0.1/postgres",
            "postgres://u:p@localhost:5432/db",
            "postgresql://[::1]:5432/db",
            "postgres:///db?host=/var/run/postgresql",
            "postgres://%2Fvar%2Frun%2Fpostgresql/db",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "postgres://u@db.example.com/db",
            "postgres://u@10.0.0.7:5432/db",
            "postgres:///db?host=db.example.com",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }

    #[test]
    fn per_message_is_unknown_when_a_side_is() {
        let clock = CpuClock {
            ticks_per_s: 100.0,
            db: DbCpu::InProcess,
            postmaster: None,
        };
        let before = Sample {
            process: Some(10),
            database: None,
            switches: Some(5),
        };
        let after = Sample {
            process: Some(30),
            database: None,
            switches: Some(2005),
        };
        let cpu = clock.per_message(before, after, 1000);
        assert_eq!(cpu.process_us, Some(200.0), "20 ticks = 200 ms over 1000");
        assert_eq!(cpu.db_us, None);
        assert_eq!(cpu.switches, Some(2.0));
    }
}
