//! The console's pages, as HTML built with maud: every value is escaped by construction, bodies
//! and headers are shown bounded, and nothing a message holds can run in the page.

use std::time::Duration;

use chrono::{NaiveDateTime, Utc};
use maud::{html, Markup, DOCTYPE};
use nimbus::admin::{DeadLetterInfo, QueuedMessage};

use super::state::{Console, Group, GroupKey, Job};

/// The most failed-message groups a page lists (the largest).
const GROUPS_SHOWN: usize = 500;

/// The most of a body or header text a page shows.
const SHOWN_BYTES: usize = 64 * 1024;

/// The page around `content`: navigation, the database, warnings, the refresh script.
pub fn layout(console: &Console, title: &str, note: Option<&str>, content: Markup) -> Markup {
    let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
    let failed = console.failed.read().unwrap_or_else(|p| p.into_inner());
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · nimbus console" }
                link rel="stylesheet" href="/console.css";
                script src="/console.js" defer {}
            }
            body data-refresh-ms=(console.settings.refresh.as_millis()) {
                header {
                    strong { "nimbus console" }
                    nav {
                        a href="/" { "Queues" }
                        a href="/monitoring" { "Monitoring" }
                        a href="/failed" { "Failed messages (" (failed.total) ")" }
                        a href="/subscriptions" { "Subscriptions" }
                        a href="/sagas" { "Sagas" }
                        a href="/delayed" { "Delayed" }
                        a href="/schedules" { "Schedules" }
                        a href="/deduplication" { "Deduplication" }
                        a href="/limits" { "Limits" }
                        a href="/bodies" { "Bodies" }
                        a href="/bridges" { "Bridges" }
                        a href="/instances" { "Instances" }
                    }
                    span.database { (console.db.database_name()) }
                    @if console.settings.read_only { span.badge { "read-only" } }
                    @if console.settings.hide_bodies { span.badge { "bodies hidden" } }
                }
                main {
                    @if let Some(note) = note { p.note role="status" { (note) } }
                    @if let Some(error) = &snapshot.error { p.error { "Reading the queues failed: " (error) } }
                    @if let Some(error) = &failed.error { p.error { "Reading the dead letters failed: " (error) } }
                    h1 { (title) }
                    (content)
                    p.read-at {
                        "Read "
                        @match snapshot.read_at {
                            Some(at) => { (ago((Utc::now() - at).to_std().unwrap_or_default())) " ago" }
                            None => "not yet",
                        }
                        "; updates every " (humantime::format_duration(console.settings.refresh)) "."
                    }
                }
            }
        }
    }
}

/// A form that posts an action, with the console's token and a confirmation in the page.
pub fn action(console: &Console, path: &str, label: &str, confirm: &str, back: &str) -> Markup {
    if console.settings.read_only {
        return html! {};
    }
    html! {
        form.action method="post" action=(path) data-confirm=(confirm) {
            input type="hidden" name="csrf" value=(console.csrf);
            input type="hidden" name="back" value=(back);
            button type="submit" { (label) }
        }
    }
}

pub fn overview(console: &Console, note: Option<&str>, all: bool) -> Markup {
    let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
    let hidden = snapshot
        .queues
        .iter()
        .filter(|q| !all && snapshot.queue_of_gone_instance(&q.name))
        .count();
    let failed = console.failed.read().unwrap_or_else(|p| p.into_inner());
    let now = Utc::now();
    let utc_now = now.naive_utc();
    let content = html! {
        p.summary {
            (plural(snapshot.queues.len(), "queue")) ", "
            (plural(snapshot.queues.iter().map(|q| q.depth).sum::<i64>().max(0) as usize, "message")) " waiting, "
            (plural(failed.total, "failed message")) " ("
            (failed.failed_within(Duration::from_secs(60), utc_now)) " in the last minute, "
            (failed.failed_within(Duration::from_secs(3600), utc_now)) " in the last hour)."
        }
        table #queues {
            thead { tr {
                th { "Queue" } th.num { "Depth" } th { "Depth, recent" } th { "Oldest message" }
                th.num { "Failed" } th { "State" } th {}
            } }
            tbody {
                @for queue in snapshot.queues.iter().filter(|q| all || !snapshot.queue_of_gone_instance(&q.name)) {
                    @let link = format!("/queues/{}", encode(&queue.name));
                    tr data-queue=(queue.name) {
                        td { a href=(link) { (queue.name) } }
                        td.num.depth { (queue.depth) }
                        td { (sparkline(snapshot.history.get(&queue.name))) }
                        td { @match queue.oldest_sent_at {
                            Some(at) => (ago((now - at).to_std().unwrap_or_default())),
                            None => "-",
                        } }
                        td.num { (failed.in_queue(&queue.name)) }
                        td.state { @if queue.paused { span.badge.paused title=(snapshot.paused_by(&queue.name).unwrap_or_default()) { "paused" } } @else { "receiving" } }
                        td {
                            @if queue.paused {
                                (action(console, &format!("{link}/resume"), "Resume",
                                    &format!("Resume {}? Its endpoints take its messages again.", queue.name), "/"))
                            } @else {
                                (action(console, &format!("{link}/pause"), "Pause",
                                    &format!("Pause {}? Its endpoints stop taking its messages; sends still go in.", queue.name), "/"))
                            }
                        }
                    }
                }
            }
        }
        @if snapshot.queues.is_empty() { p { "No queues (yet)." } }
        @if hidden > 0 {
            p #hidden-queues { (plural(hidden, "queue")) " of instances that are not running (their own queues for replies and multicast events, swept after auto_delete_on_idle) are not shown. " a href="/?all=1" { "Show them" } }
        }
        p.hint { "Depth is exact (a count); the oldest message's age is by its sender's clock. Failed counts come from the dead letters' failure times." }
    };
    // Released before the layout reads them again: a second read while a writer waits would
    // deadlock.
    drop((snapshot, failed));
    layout(console, "Queues", note, content)
}

/// A small chart of a queue's recent depths (oldest left), drawn as SVG.
fn sparkline(samples: Option<&std::collections::VecDeque<i64>>) -> Markup {
    let Some(samples) = samples.filter(|s| s.len() > 1) else {
        return html! { span.muted { "-" } };
    };
    let (width, height) = (120.0, 24.0);
    let max = samples.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = width / (samples.len() - 1) as f64;
    let points: Vec<String> = samples
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                height - 1.0 - (d.max(0) as f64 / max) * (height - 2.0)
            )
        })
        .collect();
    html! {
        svg.spark width="120" height="24" viewBox="0 0 120 24" role="img" aria-label={"depth, up to " (max) } {
            polyline points=(points.join(" ")) fill="none" stroke="currentColor" stroke-width="1.5" {}
        }
    }
}

/// What a queue's table keeps beside its messages, as its page lists it: its ordered groups with
/// messages waiting and its messages per priority (each empty where the queue keeps none; an
/// error is said on the page).
pub struct Kept {
    pub groups: nimbus::Result<Vec<nimbus::GroupSummary>>,
    pub priorities: nimbus::Result<Vec<nimbus::PriorityCount>>,
}

pub fn queue(
    console: &Console,
    name: &str,
    messages: &[QueuedMessage],
    kept: &Kept,
    limit: i64,
    note: Option<&str>,
) -> Markup {
    let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
    let info = snapshot.queues.iter().find(|q| q.name == name).cloned();
    let paused_by = snapshot.paused_by(name);
    drop(snapshot);
    let link = format!("/queues/{}", encode(name));
    let content = html! {
        @if let Some(info) = &info {
            p.summary {
                (info.depth) " messages. "
                @if info.paused { span.badge.paused { "paused" } " " (paused_by.unwrap_or_default()) ". " (action(console, &format!("{link}/resume"), "Resume", &format!("Resume {name}?"), &link)) }
                @else { (action(console, &format!("{link}/pause"), "Pause", &format!("Pause {name}? Its endpoints stop taking its messages."), &link)) }
            }
        }
        @match &kept.priorities {
            Err(e) => p.error { "Reading the priorities failed: " (e) }
            Ok(counts) if !counts.is_empty() => {
                h2 { "Priorities" }
                p.hint { "Messages per priority: the highest are received first, the oldest first within a priority." }
                table #priorities {
                    thead { tr { th { "priority" } th { "waiting" } } }
                    tbody {
                        @for c in counts {
                            tr { td.number { (c.priority) } td.number { (c.waiting) } }
                        }
                    }
                }
            }
            Ok(_) => {}
        }
        @match &kept.groups {
            Err(e) => p.error { "Reading the ordered groups failed: " (e) }
            Ok(groups) if !groups.is_empty() => {
                h2 { "Ordered groups" }
                p.hint { "Groups with messages waiting, the longest first. A held group waits for a delayed retry of its first message; the rest of the group follows it." }
                table #groups {
                    thead { tr { th { "group" } th { "waiting" } th { "state (UTC)" } } }
                    tbody {
                        @for g in groups {
                            tr {
                                td { code { (g.key) } }
                                td.number { (g.waiting) }
                                td {
                                    @if let Some(until) = g.held_until { span.badge.paused { "held" } " until " (until.format("%Y-%m-%d %H:%M:%S")) }
                                    @else { "flowing" }
                                }
                            }
                        }
                    }
                }
            }
            Ok(_) => {}
        }
        p.hint { "The first messages in the order they will be received; nothing is removed." }
        @for message in messages {
            article.message {
                h2 { "Message " code { (message.id) } }
                @if let Some(problem) = &message.unreadable { p.error { "Unreadable: " (problem) } }
                @if let Some(expires) = message.expires { p { "Expires " (expires.format("%Y-%m-%d %H:%M:%S UTC")) } }
                h3 { "Headers" }
                pre { (shown(&pretty(message.headers.as_bytes()))) }
                h3 { "Body" }
                (body(console, &message.headers, &message.body))
            }
        }
        @if messages.is_empty() { p { "No messages." } }
        @if messages.len() as i64 >= limit {
            p { a href={(link) "?limit=" (limit.saturating_mul(2))} { "Show more" } }
        }
    };
    layout(console, name, note, content)
}

/// A body, pretty-printed when it is JSON, bounded, or a line saying it is hidden.
/// A message body with its headers (JSON text): hidden when the console hides bodies, named
/// (never shown) when encrypted, decompressed when compressed.
fn body(console: &Console, headers: &str, bytes: &[u8]) -> Markup {
    if console.settings.hide_bodies {
        return html! { p.muted { "(hidden: " (bytes.len()) " bytes)" } };
    }
    match nimbus::admin::shown_body(headers, bytes) {
        nimbus::admin::ShownBody::Readable(plain) => html! { pre { (shown(&pretty(&plain))) } },
        nimbus::admin::ShownBody::Encrypted { key_id, bytes } => html! {
            p.muted { "Encrypted with key " code { (key_id) } " (" (bytes) " bytes): not shown." }
        },
        nimbus::admin::ShownBody::Unreadable(why) => html! { p.error { "Unreadable: " (why) } },
        nimbus::admin::ShownBody::StoredApart { id, bytes } => html! {
            p.muted { "Stored apart in NimbusBodies under " code { (id) } " (" (bytes) " bytes): not shown." }
        },
    }
}

/// JSON pretty-printed; anything else as text (bytes that are not UTF-8 replaced).
fn pretty(bytes: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) => serde_json::to_string_pretty(&value)
            .unwrap_or_else(|_| String::from_utf8_lossy(bytes).into_owned()),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// At most [`SHOWN_BYTES`] of `text`, cut at a character boundary, saying how much was left out.
fn shown(text: &str) -> String {
    if text.len() <= SHOWN_BYTES {
        return text.to_string();
    }
    let mut end = SHOWN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes not shown)",
        &text[..end],
        text.len() - end
    )
}

pub fn failed(console: &Console, note: Option<&str>) -> Markup {
    let failed = console.failed.read().unwrap_or_else(|p| p.into_inner());
    let jobs = console
        .jobs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    // The largest groups first, as many as a page can show.
    let mut largest: Vec<(&GroupKey, &Group)> = failed.groups.iter().collect();
    largest.sort_by(|a, b| b.1.letters.len().cmp(&a.1.letters.len()).then(a.0.cmp(b.0)));
    largest.truncate(GROUPS_SHOWN);
    let content = html! {
        (jobs_list(&jobs))
        @if !failed.complete { p.note { "Reading the dead letters…" } }
        p.summary { (plural(failed.total, "failed message")) " in " (plural(failed.groups.len(), "group")) ", by queue, message type and the first line of the reason." }
        table #groups {
            thead { tr {
                th { "Queue" } th { "Message type" } th { "Reason" } th.num { "Count" }
                th { "First failed" } th { "Last failed" } th {}
            } }
            tbody {
                @for (key, group) in &largest {
                    @let link = format!("/failed/{}", key.id());
                    tr data-group=(key.id()) {
                        td { (key.queue) }
                        td { (key.message_type) }
                        td.reason { a href=(link) { (key.reason) } }
                        td.num.count { (group.letters.len()) }
                        td.time { (time(group.first)) }
                        td.time { (time(group.last)) }
                        td.actions {
                            (action(console, &format!("{link}/replay"), "Replay all",
                                &format!("Replay {} messages of this group to {}?", group.letters.len(), key.queue), "/failed"))
                            (action(console, &format!("{link}/delete"), "Delete all",
                                &format!("Delete {} messages of this group for good?", group.letters.len()), "/failed"))
                        }
                    }
                }
            }
        }
        @if failed.groups.len() > GROUPS_SHOWN { p.hint { "The " (GROUPS_SHOWN) " largest of " (failed.groups.len()) " groups are listed." } }
        @if failed.groups.is_empty() && failed.complete { p { "No failed messages." } }
    };
    drop(failed);
    layout(console, "Failed messages", note, content)
}

fn jobs_list(jobs: &[std::sync::Arc<Job>]) -> Markup {
    use std::sync::atomic::Ordering;
    html! {
        @if !jobs.is_empty() {
            section.jobs {
                h2 { "Actions" }
                @for job in jobs.iter().rev().take(5) {
                    @let done = job.done.load(Ordering::Relaxed) + job.failed.load(Ordering::Relaxed);
                    p.job data-job=(job.id) {
                        (job.what) ": "
                        progress max=(job.total.max(1)) value=(done) {}
                        " " (done) " of " (job.total)
                        @match job.finished() {
                            Some(took) => { " — done in " (format!("{:.1}", took.as_secs_f64())) " s" }
                            None => " — running",
                        }
                        @let failed = job.failed.load(Ordering::Relaxed);
                        @if failed > 0 { span.error { " (" (failed) " failed: " (job.error.lock().map(|e| e.clone().unwrap_or_default()).unwrap_or_default()) ")" } }
                    }
                }
            }
        }
    }
}

pub fn group(console: &Console, key: &GroupKey, group: &Group, note: Option<&str>) -> Markup {
    let link = format!("/failed/{}", key.id());
    let content = html! {
        dl {
            dt { "Queue" } dd { (key.queue) }
            dt { "Message type" } dd { (key.message_type) }
            dt { "Reason" } dd { (key.reason) }
        }
        p {
            (action(console, &format!("{link}/replay"), "Replay all",
                &format!("Replay {} messages to {}?", group.letters.len(), key.queue), "/failed"))
            (action(console, &format!("{link}/delete"), "Delete all",
                &format!("Delete {} messages for good?", group.letters.len()), "/failed"))
        }
        table #letters {
            thead { tr { th { "Message" } th { "Reason" } th { "Failed" } th.num { "Attempts" } th {} } }
            tbody {
                @for letter in group.letters.iter().take(500) {
                    @let path = format!("/letters/{}", encode(&letter.id));
                    tr {
                        td { a href=(path) { code { (letter.id) } } }
                        td.reason { (letter.variant.as_deref().unwrap_or(&key.reason)) }
                        td.time { (time(letter.failed_at)) }
                        td.num { (letter.attempts) }
                        td.actions {
                            (action(console, &format!("{path}/replay"), "Replay", "Replay this message?", &link))
                            (action(console, &format!("{path}/delete"), "Delete", "Delete this message for good?", &link))
                        }
                    }
                }
            }
        }
        @if group.letters.len() > 500 { p.hint { "The oldest 500 of " (group.letters.len()) " are listed; group actions take all of them." } }
    };
    layout(console, "Failed message group", note, content)
}

pub fn letter(console: &Console, letter: &DeadLetterInfo, note: Option<&str>) -> Markup {
    let path = format!("/letters/{}", encode(&letter.message_id));
    let envelope: Option<serde_json::Value> = serde_json::from_slice(&letter.body).ok();
    let headers = envelope
        .as_ref()
        .and_then(|e| e.get("headers"))
        .map(|h| serde_json::to_string_pretty(h).unwrap_or_default());
    let inner_body = envelope
        .as_ref()
        .and_then(|e| e.get("body").filter(|b| !b.is_null()))
        .map(|b| match b {
            serde_json::Value::String(text) => text.as_bytes().to_vec(),
            other => other.to_string().into_bytes(),
        })
        .or_else(|| {
            use base64::Engine as _;
            let encoded = envelope.as_ref()?.get("bodyBase64")?.as_str()?;
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
        });
    let inner_headers = envelope
        .as_ref()
        .and_then(|e| e.get("headers"))
        .map(|h| h.to_string())
        .unwrap_or_else(|| "{}".to_string());
    let content = html! {
        dl {
            dt { "Queue" } dd { (letter.original_destination.as_deref().unwrap_or("(unknown)")) }
            dt { "Message type" } dd { (letter.message_type().unwrap_or_default()) }
            dt { "Failed" } dd { (time(letter.failed_at)) }
            dt { "Attempts" } dd { (letter.delivery_attempts) }
        }
        p {
            (action(console, &format!("{path}/replay"), "Replay", "Replay this message?", "/failed"))
            (action(console, &format!("{path}/delete"), "Delete", "Delete this message for good?", "/failed"))
        }
        h2 { "Reason" }
        pre { (shown(&letter.reason().unwrap_or_default())) }
        @if let Some(headers) = headers { h2 { "Headers" } pre { (shown(&headers)) } }
        h2 { "Body" }
        @match inner_body {
            Some(bytes) => (body(console, &inner_headers, &bytes)),
            None => (body(console, "{}", &letter.body)),
        }
    };
    layout(console, "Failed message", note, content)
}

pub fn subscriptions(console: &Console, note: Option<&str>) -> Markup {
    let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
    let now = Utc::now().naive_utc();
    let content = html! {
        table #subscriptions {
            thead { tr { th { "Topic" } th { "Subscriber queue" } th { "Last heartbeat" } th { "Idle promise" } th { "State" } } }
            tbody {
                @for s in snapshot.subscriptions.iter().filter(|s| s.topic != nimbus::subscriptions::INSTANCE_QUEUE_TOPIC) {
                    @let lapsed = lapsed(s.last_seen_at, s.idle_seconds, now);
                    tr.lapsed[lapsed] {
                        td { (s.topic) } td { (s.queue) }
                        td { (heartbeat_age(s.last_seen_at, now)) }
                        td { @match s.idle_seconds { Some(seconds) => (ago(Duration::from_secs(seconds.max(0) as u64))), None => "-" } }
                        td { @if lapsed { span.badge.paused { "lapsed" } } @else { "live" } }
                    }
                }
            }
        }
        @if !console.settings.read_only {
            form.sweep method="post" action="/subscriptions/sweep" data-confirm="Delete the subscriptions idle that long, and the instance queues left without one?" {
                input type="hidden" name="csrf" value=(console.csrf);
                input type="hidden" name="back" value="/subscriptions";
                label { "Sweep subscriptions idle for more than " input name="idle" value="4days" size="8"; }
                " " button type="submit" { "Sweep" }
            }
        }
        p.hint { "A subscription lapses when its subscriber has not refreshed it for longer than the idle period it promised; publishers skip lapsed ones, and a sweep deletes them." }
    };
    drop(snapshot);
    layout(console, "Subscriptions", note, content)
}

pub fn instances(console: &Console, note: Option<&str>, all: bool) -> Markup {
    use nimbus::admin::InstanceState;
    let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
    let content = match &snapshot.instances {
        None => html! {
            p #instances-missing { "No bus has registered here: this database has no NimbusInstances table. Buses of this version create it when they start (with auto-create), or run " code { "nimbus schema apply" } "." }
        },
        Some(instances) => {
            let stopped = instances
                .iter()
                .filter(|i| i.state == InstanceState::Stopped)
                .count();
            html! {
                table #instances {
                    thead { tr {
                        th { "Application" } th { "Instance" } th { "State" } th { "Last heartbeat" }
                        th { "Host" } th.num { "PID" } th { "Version" } th { "Queues" } th { "Handles" } th { "Started" }
                    } }
                    tbody {
                        @for i in instances.iter().filter(|i| all || i.state != InstanceState::Stopped) {
                            tr.lapsed[i.state == InstanceState::NotResponding] data-state=(i.state.as_str()) {
                                td { (i.application) }
                                td { (i.instance) }
                                td.state { @match i.state {
                                    InstanceState::Live => "live",
                                    InstanceState::NotResponding => span.badge.paused { "not responding" },
                                    InstanceState::Stopped => span.badge { "stopped" },
                                    _ => (i.state.as_str()),
                                } }
                                td { (ago(Duration::from_secs(i.seconds_since_seen.max(0).unsigned_abs()))) " ago" }
                                td { (i.host) }
                                td.num { (i.process_id) }
                                td { (i.version) }
                                td { (i.queues.join(", ")) }
                                td { (i.handlers.join(", ")) }
                                td { (i.started_at.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string()).unwrap_or_default()) }
                            }
                        }
                    }
                }
                @if stopped > 0 && !all {
                    p { (stopped) " stopped instances (kept a day) are not shown. " a href="/instances?all=1" { "Show them" } }
                }
                p.hint { "Every running bus registers here and refreshes its heartbeat (every 5 s by default); one that misses three heartbeats in a row is not responding: killed, frozen or cut off from the database. Times are the database's." }
            }
        }
    };
    drop(snapshot);
    layout(console, "Instances", note, content)
}

fn lapsed(last_seen: Option<NaiveDateTime>, idle_seconds: Option<i64>, now: NaiveDateTime) -> bool {
    match (last_seen, idle_seconds) {
        (Some(seen), Some(idle)) => (now - seen).num_seconds() > idle,
        _ => false,
    }
}

fn heartbeat_age(last_seen: Option<NaiveDateTime>, now: NaiveDateTime) -> String {
    match last_seen {
        Some(seen) => format!("{} ago", ago((now - seen).to_std().unwrap_or_default())),
        None => "never".into(),
    }
}

pub fn not_found(console: &Console, what: &str) -> Markup {
    layout(
        console,
        "Not found",
        None,
        html! { p { (what) } p { a href="/" { "Back to the queues" } } },
    )
}

/// `n thing` or `n things`.
pub fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

fn time(at: Option<NaiveDateTime>) -> String {
    at.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "-".into())
}

/// A duration as people read it, to the second.
pub fn ago(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// `text` percent-encoded for a URL path segment.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The console's script: confirms actions in the page and refreshes the page's content without
/// a reload (it swaps `main`, and waits while a dialog is open or text is selected).
pub const SCRIPT: &str = r#"
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) { event.preventDefault(); }
});
const every = Number(document.body.dataset.refreshMs) || 5000;
setInterval(async () => {
  if (document.hidden || String(window.getSelection())) { return; }
  try {
    const response = await fetch(window.location.href, { headers: { 'X-Nimbus-Refresh': '1' } });
    if (!response.ok) { return; }
    const page = new DOMParser().parseFromString(await response.text(), 'text/html');
    const fresh = page.querySelector('main');
    if (fresh) { document.querySelector('main').replaceWith(fresh); }
  } catch (e) { /* the next round tries again */ }
}, every);
"#;

/// The console's styles: readable on a laptop, no external fonts.
pub const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em; background: #1d2b3a; color: #fff; }
header a { color: #cfe3ff; margin-right: 1em; text-decoration: none; }
header a:hover { text-decoration: underline; }
header .database { margin-left: auto; opacity: .8; }
main { padding: 1em 1.5em; max-width: 1300px; }
h1 { font-size: 1.4em; margin: .3em 0 .6em; }
h2 { font-size: 1.1em; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #e3e6ea; vertical-align: middle; }
th { background: #eef1f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { max-width: 38em; overflow-wrap: anywhere; }
td.time { white-space: nowrap; }
pre { background: #fff; border: 1px solid #e3e6ea; padding: .6em; overflow: auto; max-height: 28em; white-space: pre-wrap; overflow-wrap: anywhere; }
form.action { display: inline; margin-right: .4em; }
form.sweep { margin-top: .8em; }
button { font: inherit; padding: .15em .7em; border: 1px solid #8a99a8; border-radius: 4px; background: #fff; cursor: pointer; }
button:hover { background: #e8eef5; }
.badge { display: inline-block; padding: 0 .5em; border-radius: 8px; background: #dde4ec; font-size: .85em; }
.badge.paused { background: #ffe3b3; }
tr.lapsed { color: #8a5a00; }
.note { background: #e5f3e8; padding: .4em .7em; border-radius: 4px; }
.error { color: #a11; }
.muted, .hint, .read-at { color: #66717d; }
.spark { color: #2e6fb7; vertical-align: middle; }
progress { width: 12em; vertical-align: middle; }
article.message { background: #fff; border: 1px solid #e3e6ea; padding: .2em 1em 1em; margin-bottom: 1em; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dt { font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1em; }
figure.chart { margin: 0; background: #fff; border: 1px solid #e3e6ea; padding: .4em .6em; }
figure.chart figcaption { font-weight: 600; }
svg.chart line.grid { stroke: #e3e6ea; }
svg.chart line.axis { stroke: #8a99a8; }
svg.chart text { font-size: 11px; fill: #4a5560; }
svg.chart text.unit { font-weight: 600; }
p.legend span { margin-right: 1em; }
p.windows a, p.windows strong { margin-right: .6em; }
dd { margin: 0; overflow-wrap: anywhere; }
"#;
