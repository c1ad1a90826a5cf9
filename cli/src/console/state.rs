//! What the console shows, read in the background so that a page renders from memory however
//! large the database: a snapshot of the queues and subscriptions (with each queue's recent
//! depths, for its chart), an index of the dead letters by failure group, and the bulk actions
//! running now with their progress.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, Utc};
use nimbus::admin::{
    Database, DeadLetterInfo, DeadLetterQuery, InstanceInfo, PausedQueue, QueueInfo,
    SubscriptionInfo,
};

use super::Settings;

/// How many depth samples a queue's chart keeps (at the default 5 s refresh: 30 minutes).
const HISTORY: usize = 360;
/// Dead letters read per statement while indexing.
const PAGE: i64 = 500;
/// How often the dead-letter index is rebuilt from scratch (letters others replayed or purged
/// disappear then); in between, only new letters are read.
const FULL_SCAN_EVERY: Duration = Duration::from_secs(60);
/// How many finished bulk actions the failed-messages page keeps showing.
const KEPT_JOBS: usize = 10;
/// The longest failure reason kept for grouping (its first line).
const REASON_CHARS: usize = 300;

/// The console's state, shared by every request.
pub struct Console {
    pub db: Database,
    pub settings: Settings,
    /// The secret operators must present, where one is set.
    pub token: Option<String>,
    /// The secret every form carries, so another site cannot post one.
    pub csrf: String,
    pub snapshot: RwLock<Snapshot>,
    pub failed: RwLock<FailedIndex>,
    pub jobs: Mutex<Vec<Arc<Job>>>,
    next_job: AtomicU64,
    /// Asks the dead-letter indexer for a full scan now (after an action changed the letters).
    pub rescan: tokio::sync::Notify,
    /// The monitoring reports, as last read per window.
    pub monitoring: MonitoringCache,
}

/// One read of a window: the combined reports, none where the table is missing, or why the
/// read failed.
pub type MonitoringRead = Arc<Result<Option<nimbus::monitoring::MonitoringView>, String>>;

/// The last read of each window, and when.
#[derive(Default)]
pub struct MonitoringCache {
    pub reads: Mutex<std::collections::HashMap<&'static str, (std::time::Instant, MonitoringRead)>>,
}

/// The queues and subscriptions, as last read.
#[derive(Default)]
pub struct Snapshot {
    pub queues: Vec<QueueInfo>,
    pub subscriptions: Vec<SubscriptionInfo>,
    /// Who paused which queue, and when.
    pub paused: Vec<PausedQueue>,
    /// The registered buses; `None` where `NimbusInstances` does not exist.
    pub instances: Option<Vec<InstanceInfo>>,
    /// Each queue's depth at the last reads, oldest first.
    pub history: BTreeMap<String, VecDeque<i64>>,
    pub read_at: Option<DateTime<Utc>>,
    /// Why the last read failed, if it did (shown on every page).
    pub error: Option<String>,
}

/// What groups failed messages: where they failed, what they were and why (the first line of
/// the reason, its numbers and ids replaced by `#` and `<id>`: "declined: 150000 cents" and
/// "declined: 300000 cents" are one group), as ServicePulse groups them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    pub queue: String,
    pub message_type: String,
    pub reason: String,
}

impl GroupKey {
    fn of(letter: &DeadLetterInfo) -> GroupKey {
        let reason = letter
            .reason_without_message()
            .unwrap_or_else(|| "(no reason recorded)".into());
        let first_line = reason.lines().next().unwrap_or_default();
        GroupKey {
            queue: letter
                .original_destination
                .clone()
                .unwrap_or_else(|| "(unknown)".into()),
            message_type: letter.message_type().unwrap_or_else(|| "(unknown)".into()),
            reason: reason_shape(&first_line.chars().take(REASON_CHARS).collect::<String>()),
        }
    }

    /// A short name for the group in links, the same for the same group while the console runs.
    pub fn id(&self) -> String {
        let mut hasher = std::hash::DefaultHasher::new();
        self.hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    }
}

/// `reason` with the numbers and ids that tell one failure of a kind from another replaced: a
/// UUID by `<id>`, a number standing alone (not part of a word such as `v2`) by `#`.
pub fn reason_shape(reason: &str) -> String {
    let chars: Vec<char> = reason.chars().collect();
    let is_uuid_at = |at: usize| {
        chars.len() >= at + 36
            && chars[at..at + 36].iter().enumerate().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    *c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    };
    let mut shape = String::with_capacity(reason.len());
    let mut i = 0;
    while i < chars.len() {
        let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if !word_before && is_uuid_at(i) {
            shape.push_str("<id>");
            i += 36;
        } else if !word_before && chars[i].is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], '.' | ',')
                        && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            shape.push('#');
        } else {
            shape.push(chars[i]);
            i += 1;
        }
    }
    shape
}

/// One dead letter, as the index keeps it (its body stays in the database).
#[derive(Clone, Debug)]
pub struct LetterRef {
    pub id: String,
    pub failed_at: Option<NaiveDateTime>,
    pub attempts: i64,
    /// The first line of its reason, where it is not its group's shape word for word (numbers
    /// and ids in it): the variants a group page lists.
    pub variant: Option<String>,
}

/// The dead letters of one group.
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub letters: Vec<LetterRef>,
    pub first: Option<NaiveDateTime>,
    pub last: Option<NaiveDateTime>,
}

/// Every dead letter by group, read in pages in the background.
#[derive(Default)]
pub struct FailedIndex {
    pub groups: BTreeMap<GroupKey, Group>,
    pub total: usize,
    /// The last letter read, where the next incremental read starts.
    last: Option<DeadLetterInfo>,
    pub scanned_at: Option<DateTime<Utc>>,
    /// The first full scan has finished.
    pub complete: bool,
    pub error: Option<String>,
}

impl FailedIndex {
    fn add(&mut self, page: &[DeadLetterInfo]) {
        for letter in page {
            let key = GroupKey::of(letter);
            let variant = letter
                .reason_without_message()
                .and_then(|r| {
                    r.lines()
                        .next()
                        .map(|l| l.chars().take(REASON_CHARS).collect())
                })
                .filter(|line: &String| *line != key.reason);
            let group = self.groups.entry(key).or_default();
            let at = letter.failed_at;
            group.first = earliest(group.first, at);
            group.last = group.last.max(at);
            group.letters.push(LetterRef {
                id: letter.message_id.clone(),
                failed_at: at,
                attempts: letter.delivery_attempts,
                variant,
            });
            self.total += 1;
        }
        if let Some(last) = page.last() {
            // Only its id and time are needed to page on.
            let mut last = last.clone();
            last.body.clear();
            self.last = Some(last);
        }
    }

    /// Adds what an incremental read found after this index's last letter.
    fn merge(&mut self, fresh: FailedIndex) {
        for (key, group) in fresh.groups {
            let into = self.groups.entry(key).or_default();
            into.first = earliest(into.first, group.first);
            into.last = into.last.max(group.last);
            into.letters.extend(group.letters);
        }
        self.total += fresh.total;
        if fresh.last.is_some() {
            self.last = fresh.last;
        }
        self.scanned_at = fresh.scanned_at;
        self.error = None;
    }

    /// The group whose [`GroupKey::id`] is `id`.
    pub fn group(&self, id: &str) -> Option<(&GroupKey, &Group)> {
        self.groups.iter().find(|(key, _)| key.id() == id)
    }

    /// Forgets the letter `id` (replayed or deleted from this console).
    pub fn forget(&mut self, id: &str) {
        for group in self.groups.values_mut() {
            let before = group.letters.len();
            group.letters.retain(|l| !l.id.eq_ignore_ascii_case(id));
            self.total -= before - group.letters.len();
        }
        self.groups.retain(|_, g| !g.letters.is_empty());
    }

    /// How many letters failed in the last `window`, by the database's failure times.
    pub fn failed_within(&self, window: Duration, now: NaiveDateTime) -> usize {
        let since = now - chrono::Duration::from_std(window).unwrap_or(chrono::Duration::zero());
        self.groups
            .values()
            .flat_map(|g| &g.letters)
            .filter(|l| l.failed_at.is_some_and(|t| t >= since))
            .count()
    }

    /// How many letters failed in `queue`.
    pub fn in_queue(&self, queue: &str) -> usize {
        self.groups
            .iter()
            .filter(|(key, _)| key.queue == queue)
            .map(|(_, g)| g.letters.len())
            .sum()
    }
}

/// The earlier of two times, either of which may be unknown.
fn earliest(a: Option<NaiveDateTime>, b: Option<NaiveDateTime>) -> Option<NaiveDateTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether `a` and `b` are the same letter (or both none).
fn same_letter(a: Option<&DeadLetterInfo>, b: Option<&DeadLetterInfo>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.message_id == b.message_id && a.failed_at == b.failed_at,
        (None, None) => true,
        _ => false,
    }
}

/// A bulk action running in the background (a group's replay or deletion), with its progress.
pub struct Job {
    pub id: u64,
    pub what: String,
    pub total: usize,
    pub done: AtomicUsize,
    pub failed: AtomicUsize,
    pub started: Instant,
    pub took: Mutex<Option<Duration>>,
    pub error: Mutex<Option<String>>,
}

impl Job {
    pub fn finished(&self) -> Option<Duration> {
        *self.took.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Snapshot {
    /// Whether `queue` is the own queue (for replies and multicast events) of an instance that
    /// does not run: registered, not live, or not registered at all while others are. `false`
    /// where the database has no instance registry, or for any other queue.
    pub fn queue_of_gone_instance(&self, queue: &str) -> bool {
        let Some(instances) = &self.instances else {
            return false;
        };
        let is_instance_queue = self
            .subscriptions
            .iter()
            .any(|s| s.topic == nimbus::subscriptions::INSTANCE_QUEUE_TOPIC && s.queue == queue);
        is_instance_queue
            && !instances.iter().any(|i| {
                i.state == nimbus::admin::InstanceState::Live
                    && format!("{}.{}", i.application, i.instance) == queue
            })
    }

    /// Who paused `queue` and when, as a line for people; `None` when it is not paused.
    pub fn paused_by(&self, queue: &str) -> Option<String> {
        let p = self
            .paused
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(queue))?;
        let at = p
            .paused_at
            .map(|t| t.format(" at %Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default();
        Some(format!("paused by {}{at}", p.paused_by))
    }
}

impl Console {
    pub fn new(db: Database, settings: Settings, token: Option<String>) -> Console {
        Console {
            db,
            settings,
            token,
            csrf: uuid::Uuid::new_v4().simple().to_string(),
            snapshot: RwLock::default(),
            failed: RwLock::default(),
            jobs: Mutex::default(),
            next_job: AtomicU64::new(1),
            rescan: tokio::sync::Notify::new(),
            monitoring: Default::default(),
        }
    }

    /// Starts the background readers: the queues every refresh, the dead letters every refresh
    /// (new ones) and every minute (all of them).
    pub fn start(self: &Arc<Self>) {
        let console = self.clone();
        tokio::spawn(async move {
            loop {
                console.read_snapshot().await;
                tokio::time::sleep(console.settings.refresh).await;
            }
        });
        let console = self.clone();
        tokio::spawn(async move {
            let mut full_at: Option<Instant> = None;
            loop {
                let full = full_at.is_none_or(|at| at.elapsed() >= FULL_SCAN_EVERY);
                if full {
                    full_at = Some(Instant::now());
                }
                console.index_dead_letters(full).await;
                tokio::select! {
                    _ = tokio::time::sleep(console.settings.refresh) => {}
                    _ = console.rescan.notified() => full_at = None,
                }
            }
        });
    }

    /// Reads every queue and subscription once.
    pub async fn read_snapshot(&self) {
        let read = async {
            let queues = self.db.queues().await?;
            let subscriptions = self.db.subscriptions().await?;
            let paused = self.db.paused_queues().await?;
            let instances = self.db.instances().await?;
            Ok::<_, nimbus::NimbusError>((queues, subscriptions, paused, instances))
        };
        let result = read.await;
        let mut snapshot = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok((queues, subscriptions, paused, instances)) => {
                for queue in &queues {
                    let samples = snapshot.history.entry(queue.name.clone()).or_default();
                    samples.push_back(queue.depth);
                    while samples.len() > HISTORY {
                        samples.pop_front();
                    }
                }
                snapshot
                    .history
                    .retain(|name, _| queues.iter().any(|q| &q.name == name));
                snapshot.queues = queues;
                snapshot.subscriptions = subscriptions;
                snapshot.paused = paused;
                snapshot.instances = instances;
                snapshot.read_at = Some(Utc::now());
                snapshot.error = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the console could not read the queues");
                snapshot.error = Some(e.to_string());
            }
        }
    }

    /// Reads the dead letters: all of them into a new index (`full`), or those after the last
    /// one read.
    async fn index_dead_letters(&self, full: bool) {
        // An incremental read starts after the last letter indexed and reads only what came
        // since, into an index of its own, merged in at the end: the index is never copied.
        let start = if full {
            None
        } else {
            let current = self.failed.read().unwrap_or_else(|p| p.into_inner());
            if !current.complete {
                return;
            }
            current.last.clone()
        };
        let mut fresh = FailedIndex {
            last: start.clone(),
            ..FailedIndex::default()
        };
        let everything = DeadLetterQuery::default();
        loop {
            let page = match self
                .db
                .dead_letters_matching(&everything, fresh.last.as_ref(), PAGE)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(error = %e, "the console could not read the dead letters");
                    let mut current = self.failed.write().unwrap_or_else(|p| p.into_inner());
                    current.error = Some(e.to_string());
                    return;
                }
            };
            fresh.add(&page);
            if (page.len() as i64) < PAGE {
                break;
            }
        }
        fresh.scanned_at = Some(Utc::now());
        fresh.complete = true;
        let mut current = self.failed.write().unwrap_or_else(|p| p.into_inner());
        if full {
            *current = fresh;
        } else if same_letter(current.last.as_ref(), start.as_ref()) {
            // (Otherwise a full scan replaced the index meanwhile: it has these letters.)
            current.merge(fresh);
        }
    }

    /// Starts a bulk action over `ids` in the background, 8 at a time; returns its job.
    pub fn run_job<F, Fut>(self: &Arc<Self>, what: String, ids: Vec<String>, one: F) -> Arc<Job>
    where
        F: Fn(Database, uuid::Uuid) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = nimbus::Result<bool>> + Send + 'static,
    {
        use futures::StreamExt;
        let job = Arc::new(Job {
            id: self.next_job.fetch_add(1, Ordering::Relaxed),
            what,
            total: ids.len(),
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            started: Instant::now(),
            took: Mutex::new(None),
            error: Mutex::new(None),
        });
        {
            let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            // Finished jobs beyond the last few are forgotten.
            let finished = jobs.iter().filter(|j| j.finished().is_some()).count();
            let mut drop_finished = finished.saturating_sub(KEPT_JOBS);
            jobs.retain(|j| {
                let forget = drop_finished > 0 && j.finished().is_some();
                if forget {
                    drop_finished -= 1;
                }
                !forget
            });
            jobs.push(job.clone());
        }
        let (console, running) = (self.clone(), job.clone());
        tokio::spawn(async move {
            let one = &one;
            let db = console.db.clone();
            let mut results = futures::stream::iter(ids)
                .map(|id| {
                    let db = db.clone();
                    async move {
                        match uuid::Uuid::parse_str(&id) {
                            Ok(uuid) => one(db, uuid).await.map_err(|e| e.to_string()),
                            Err(e) => Err(format!("dead letter id {id:?} is not a UUID: {e}")),
                        }
                    }
                })
                .buffer_unordered(8);
            while let Some(result) = results.next().await {
                match result {
                    Ok(_) => running.done.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        let mut error = running.error.lock().unwrap_or_else(|p| p.into_inner());
                        if error.is_none() {
                            tracing::warn!(job = %running.what, error = %e, "a console action failed for a letter");
                            *error = Some(e.to_string());
                        }
                        running.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
            let took = running.started.elapsed();
            *running.took.lock().unwrap_or_else(|p| p.into_inner()) = Some(took);
            tracing::info!(
                job = %running.what,
                done = running.done.load(Ordering::Relaxed),
                failed = running.failed.load(Ordering::Relaxed),
                took = ?took,
                "console action finished"
            );
            console.rescan.notify_one();
        });
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letter(id: &str, queue: &str, reason: &str, minutes_ago: i64) -> DeadLetterInfo {
        let envelope = serde_json::json!({
            "reason": format!("message {id} (Shop.Order): {reason}"),
            "headers": { "NServiceBus.EnclosedMessageTypes": "Shop.Order" },
        });
        let mut letter = DeadLetterInfo::default();
        letter.message_id = id.into();
        letter.original_destination = Some(queue.into());
        letter.body = serde_json::to_vec(&envelope).unwrap();
        letter.delivery_attempts = 3;
        letter.failed_at = Some(Utc::now().naive_utc() - chrono::Duration::minutes(minutes_ago));
        letter
    }

    #[test]
    fn reasons_that_differ_only_in_numbers_and_ids_share_a_shape() {
        assert_eq!(
            reason_shape("card declined: 150000 cents, order 7f3c1e9a-0b2d-4c5e-8f90-123456789abc"),
            "card declined: # cents, order <id>"
        );
        assert_eq!(
            reason_shape("card declined: 3,000.50 cents"),
            "card declined: # cents"
        );
        assert_eq!(
            reason_shape("utf8 v2 step_3 failed after 3 tries"),
            "utf8 v2 step_3 failed after # tries",
            "digits inside words stay"
        );
        let mut index = FailedIndex::default();
        index.add(&[
            letter("a1", "Billing", "card declined: 150000 cents", 0),
            letter("a2", "Billing", "card declined: 300000 cents", 1),
            letter("a3", "Billing", "card declined: 450000 cents", 2),
        ]);
        assert_eq!(index.groups.len(), 1, "{:?}", index.groups.keys());
        let (key, group) = index.groups.iter().next().unwrap();
        assert_eq!(key.reason, "card declined: # cents");
        let variants: Vec<_> = group
            .letters
            .iter()
            .filter_map(|l| l.variant.as_deref())
            .collect();
        assert_eq!(
            variants,
            vec![
                "card declined: 150000 cents",
                "card declined: 300000 cents",
                "card declined: 450000 cents"
            ]
        );
    }

    #[test]
    fn letters_that_failed_alike_share_a_group_whatever_their_ids() {
        let mut index = FailedIndex::default();
        index.add(&[
            letter("a1", "Billing", "the handler failed: timeout", 0),
            letter("a2", "Billing", "the handler failed: timeout", 5),
            letter(
                "b1",
                "Billing",
                "the handler failed: declined\nat line 2",
                90,
            ),
            letter("c1", "Sales", "the handler failed: timeout", 0),
        ]);
        assert_eq!(index.total, 4);
        assert_eq!(index.groups.len(), 3, "{:?}", index.groups.keys());
        let timeout = GroupKey {
            queue: "Billing".into(),
            message_type: "Shop.Order".into(),
            reason: "the handler failed: timeout".into(),
        };
        assert_eq!(index.groups[&timeout].letters.len(), 2);
        assert_eq!(index.group(&timeout.id()).map(|(k, _)| k), Some(&timeout));
        assert_eq!(index.in_queue("Billing"), 3);
        let now = Utc::now().naive_utc();
        assert_eq!(index.failed_within(Duration::from_secs(60), now), 2);
        assert_eq!(index.failed_within(Duration::from_secs(3600), now), 3);

        // What an incremental read finds after the last letter joins its group.
        let mut fresh = FailedIndex::default();
        fresh.add(&[letter("a3", "Billing", "the handler failed: timeout", 0)]);
        index.merge(fresh);
        assert_eq!(index.groups[&timeout].letters.len(), 3);
        assert_eq!(index.total, 5);
        assert_eq!(
            index.last.as_ref().map(|l| l.message_id.as_str()),
            Some("a3")
        );
        index.forget("a3");

        index.forget("A2");
        index.forget("b1");
        assert_eq!(index.total, 2);
        assert_eq!(index.groups.len(), 2, "an emptied group goes");
    }
}
