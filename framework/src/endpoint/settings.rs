//! Settings a bus can be configured from, outside the code: a file (any serde format: JSON,
//! TOML, YAML…) or the environment (`NIMBUS_…` variables). Durations are written the human way
//! (`"250ms"`, `"30s"`, `"4days"`). Every field is optional; what is set is applied over the
//! builder's defaults by [`BusBuilder::settings`], and checked by `build()` like the rest.
//!
//! ```
//! let settings: nimbus::BusSettings = serde_json::from_str(
//!     r#"{ "application": "Sales", "instance": "sales-1", "database_url": "sqlite://sales.db",
//!          "peek_delay": "250ms", "concurrency": 8, "auto_delete_on_idle": "1day" }"#,
//! ).unwrap();
//! let endpoint = nimbus::Bus::builder().settings(&settings).build().unwrap();
//! assert_eq!(endpoint.input_queue(), "Sales");
//! ```

use std::time::Duration;

use serde::Deserialize;

use crate::endpoint::builder::BusBuilder;
use crate::error::{NimbusError, Result};
use crate::transport::StorageLayout;

/// A bus's settings, as a file or the environment gives them. See the module documentation.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BusSettings {
    /// The application's name (its input queue); without `instance`, the instance is named
    /// after the host ([`BusBuilder::application`]).
    pub application: Option<String>,
    /// This instance's name; applied together with `application`.
    pub instance: Option<String>,
    /// [`BusBuilder::instance_heartbeat`].
    #[serde(default, with = "humantime_serde")]
    pub instance_heartbeat: Option<Duration>,
    /// [`BusBuilder::share_instance_name`].
    pub share_instance_name: Option<bool>,
    /// [`BusBuilder::max_body_size`], in bytes.
    pub max_body_size: Option<usize>,
    /// [`BusBuilder::claim_check`]'s threshold in bytes (bodies above it are stored apart), or
    /// `"off"`.
    #[serde(default, deserialize_with = "bytes_or_off")]
    pub claim_check_above: Option<Option<usize>>,
    /// [`BusBuilder::dead_letter_retention`]; `"forever"` keeps them.
    #[serde(default, deserialize_with = "retention")]
    pub dead_letter_retention: Option<Retention>,
    /// [`BusBuilder::monitoring_interval`] (`"10s"`); `"off"` writes no reports.
    #[serde(default, deserialize_with = "interval_or_off")]
    pub monitoring_interval: Option<Option<Duration>>,
    /// [`BusBuilder::monitoring_retention`].
    #[serde(default, with = "humantime_serde")]
    pub monitoring_retention: Option<Duration>,
    /// [`BusBuilder::connection_limit`].
    pub connection_limit: Option<usize>,
    /// [`BusBuilder::connection_idle_timeout`].
    #[serde(default, with = "humantime_serde")]
    pub connection_idle_timeout: Option<Duration>,
    /// The database URL or ADO.NET connection string.
    pub database_url: Option<String>,
    /// The schema.
    pub schema: Option<String>,
    /// `table_per_queue` or `shared_table`.
    pub storage_layout: Option<StorageLayout>,
    /// Create missing tables at start.
    pub auto_create_schema: Option<bool>,
    /// Let sends create the queues they name.
    pub create_queues_on_send: Option<bool>,
    /// Write the application's concurrent sends in shared commits.
    pub shared_commits: Option<bool>,
    /// How long an idle receiver waits before looking again.
    #[serde(with = "humantime_serde")]
    pub peek_delay: Option<Duration>,
    /// [`BusBuilder::idle_poll`].
    #[serde(default, with = "humantime_serde")]
    pub idle_poll: Option<Duration>,
    /// Handlers at once.
    pub concurrency: Option<usize>,
    /// [`BusBuilder::handler_threads`].
    pub handler_threads: Option<usize>,
    /// [`BusBuilder::blocking_threads`].
    pub blocking_threads: Option<usize>,
    /// [`BusBuilder::receive_batch`].
    pub receive_batch: Option<usize>,
    /// [`BusBuilder::table_maintenance_interval`].
    #[serde(with = "humantime_serde")]
    pub table_maintenance_interval: Option<Duration>,
    /// Retries at once after a failure.
    pub immediate_retries: Option<u32>,
    /// Delayed retries after the immediate ones.
    pub delayed_retries: Option<u32>,
    /// The n-th delayed retry waits n × this.
    #[serde(with = "humantime_serde")]
    pub delayed_retry_increment: Option<Duration>,
    /// How long a handler may run.
    #[serde(with = "humantime_serde")]
    pub handler_timeout: Option<Duration>,
    /// How long one database call may take.
    #[serde(with = "humantime_serde")]
    pub database_timeout: Option<Duration>,
    /// How long the database may fail before the critical-error callback fires.
    #[serde(with = "humantime_serde")]
    pub critical_error_after: Option<Duration>,
    /// This subscriber's idle period.
    #[serde(with = "humantime_serde")]
    pub auto_delete_on_idle: Option<Duration>,
    /// How long `Bus::request` waits for its reply.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Option<Duration>,
}

/// How long something is kept: a period, or forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Kept this long.
    For(Duration),
    /// Kept until someone deletes it.
    Forever,
}

/// Reads a [`Retention`]: `"forever"`, or a duration written the human way (`"30days"`).
fn retention<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Retention>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    text.map(|t| {
        if t.trim().eq_ignore_ascii_case("forever") {
            Ok(Retention::Forever)
        } else {
            humantime_serde::re::humantime::parse_duration(&t)
                .map(Retention::For)
                .map_err(|e| {
                    serde::de::Error::custom(format!("{t:?}: {e}; write \"30days\" or \"forever\""))
                })
        }
    })
    .transpose()
}

/// Reads an interval that can be turned off: `"off"` (`Some(None)`), or a duration written the
/// human way (`"10s"`).
fn interval_or_off<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<Duration>>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    text.map(|t| {
        if t.trim().eq_ignore_ascii_case("off") {
            Ok(None)
        } else {
            humantime_serde::re::humantime::parse_duration(&t)
                .map(Some)
                .map_err(|e| {
                    serde::de::Error::custom(format!("{t:?}: {e}; write \"10s\" or \"off\""))
                })
        }
    })
    .transpose()
}

/// A size in bytes, or `"off"` (`Some(None)`).
fn bytes_or_off<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<usize>>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum BytesOrOff {
        Bytes(usize),
        Text(String),
    }
    let value: Option<BytesOrOff> = Option::deserialize(d)?;
    value
        .map(|v| match v {
            BytesOrOff::Bytes(n) => Ok(Some(n)),
            BytesOrOff::Text(t) if t.trim().eq_ignore_ascii_case("off") => Ok(None),
            BytesOrOff::Text(t) => t.trim().parse().map(Some).map_err(|_| {
                serde::de::Error::custom(format!(
                    "{t:?}: write a size in bytes (1048576) or \"off\""
                ))
            }),
        })
        .transpose()
}

/// The prefix of the environment variables [`BusSettings::from_env`] reads.
pub const ENV_PREFIX: &str = "NIMBUS_BUS_";

impl BusSettings {
    /// Reads `NIMBUS_BUS_<FIELD>` variables (`NIMBUS_BUS_DATABASE_URL`, `NIMBUS_BUS_PEEK_DELAY=250ms`,
    /// `NIMBUS_BUS_CONCURRENCY=8`…). A variable with that prefix that names no field is an error,
    /// so a typo does not go unnoticed. Without `NIMBUS_BUS_DATABASE_URL`, `DATABASE_URL` (what
    /// the `nimbus` tool, sqlx and most hosting platforms read) is the database.
    pub fn from_env() -> Result<Self> {
        let settings = Self::from_vars(std::env::vars(), ENV_PREFIX)?;
        Ok(settings.or_database_url(std::env::var("DATABASE_URL").ok()))
    }

    /// These settings, with `url` as the database when they name none.
    fn or_database_url(mut self, url: Option<String>) -> Self {
        if self.database_url.is_none() {
            self.database_url = url.filter(|u| !u.is_empty());
        }
        self
    }

    /// Reads settings from `(name, value)` pairs whose names start with `prefix` (the rest of
    /// the name, lower-cased, is the field); other pairs are ignored.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
        prefix: &str,
    ) -> Result<Self> {
        let mut fields = serde_json::Map::new();
        for (name, value) in vars {
            let Some(field) = name.strip_prefix(prefix) else {
                continue;
            };
            // Numbers and booleans as such; everything else (names, URLs, durations) as text.
            let value = match serde_json::from_str::<serde_json::Value>(&value) {
                Ok(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v,
                _ => serde_json::Value::String(value),
            };
            fields.insert(field.to_ascii_lowercase(), value);
        }
        serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| {
            NimbusError::config(
                format!("the {prefix}* environment variables cannot be read: {e}"),
                format!(
                    "name a field of nimbus::BusSettings after {prefix} (e.g. {prefix}PEEK_DELAY=250ms)"
                ),
            )
        })
    }
}

impl BusBuilder {
    /// Applies every setting `settings` has (a file's or the environment's) over what the builder
    /// has so far; later builder calls win over it.
    pub fn settings(mut self, settings: &BusSettings) -> Self {
        let s = settings.clone();
        match (s.application, s.instance) {
            (Some(application), Some(instance)) => self = self.names(application, instance),
            (Some(application), None) => self = self.application(application),
            (None, None) => {}
            (None, Some(instance)) => tracing::warn!(
                ?instance,
                "bus settings name an instance but no application; the instance name was not \
                 applied"
            ),
        }
        if let Some(every) = s.instance_heartbeat {
            self = self.instance_heartbeat(every);
        }
        if let Some(share) = s.share_instance_name {
            self = self.share_instance_name(share);
        }
        if let Some(bytes) = s.max_body_size {
            self = self.max_body_size(bytes);
        }
        if let Some(threshold) = s.claim_check_above {
            // The threshold of the claim check set in code (an object store), or the default's.
            let claim_check = self.claim_check.take().unwrap_or_default();
            self = self.claim_check(match threshold {
                Some(bytes) => claim_check.above(bytes),
                None => crate::ClaimCheck::off(),
            });
        }
        if let Some(retention) = s.dead_letter_retention {
            self = self.dead_letter_retention(match retention {
                Retention::For(period) => Some(period),
                Retention::Forever => None,
            });
        }
        if let Some(every) = s.monitoring_interval {
            self = self.monitoring_interval(every);
        }
        if let Some(kept) = s.monitoring_retention {
            self = self.monitoring_retention(kept);
        }
        if let Some(connections) = s.connection_limit {
            self = self.connection_limit(connections);
        }
        if let Some(timeout) = s.connection_idle_timeout {
            self = self.connection_idle_timeout(timeout);
        }
        if let Some(url) = s.database_url {
            self = self.database_url(url);
        }
        if let Some(schema) = s.schema {
            self = self.schema(schema);
        }
        if let Some(layout) = s.storage_layout {
            self = self.storage_layout(layout);
        }
        if let Some(on) = s.auto_create_schema {
            self = self.auto_create_schema(on);
        }
        if let Some(on) = s.create_queues_on_send {
            self = self.create_queues_on_send(on);
        }
        if let Some(on) = s.shared_commits {
            self = self.shared_commits(on);
        }
        if let Some(delay) = s.peek_delay {
            self = self.peek_delay(delay);
        }
        if let Some(every) = s.idle_poll {
            self = self.idle_poll(every);
        }
        if let Some(limit) = s.concurrency {
            self = self.concurrency(limit);
        }
        if let Some(threads) = s.handler_threads {
            self = self.handler_threads(threads);
        }
        if let Some(threads) = s.blocking_threads {
            self = self.blocking_threads(threads);
        }
        if let Some(messages) = s.receive_batch {
            self = self.receive_batch(messages);
        }
        if let Some(interval) = s.table_maintenance_interval {
            self = self.table_maintenance_interval(interval);
        }
        if let Some(count) = s.immediate_retries {
            self = self.immediate_retries(count);
        }
        if s.delayed_retries.is_some() || s.delayed_retry_increment.is_some() {
            let (count, increment) = self.delayed_retry_policy();
            self = self.delayed_retries(
                s.delayed_retries.unwrap_or(count),
                s.delayed_retry_increment.unwrap_or(increment),
            );
        }
        if let Some(timeout) = s.handler_timeout {
            self = self.handler_timeout(timeout);
        }
        if let Some(timeout) = s.database_timeout {
            self = self.database_timeout(timeout);
        }
        if let Some(outage) = s.critical_error_after {
            self = self.critical_error_after(outage);
        }
        if let Some(idle) = s.auto_delete_on_idle {
            self = self.auto_delete_on_idle(idle);
        }
        if let Some(timeout) = s.request_timeout {
            self = self.request_timeout(timeout);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_url_is_the_fallback_of_the_bus_own_variable() {
        let vars = |url: Option<&str>| {
            let mut vars = vec![("NIMBUS_BUS_CONCURRENCY".to_string(), "3".to_string())];
            if let Some(url) = url {
                vars.push(("NIMBUS_BUS_DATABASE_URL".to_string(), url.to_string()));
            }
            BusSettings::from_vars(vars, ENV_PREFIX).unwrap()
        };
        let general = Some("postgres://app@db/shop".to_string());
        let settings = vars(None).or_database_url(general.clone());
        assert_eq!(
            settings.database_url.as_deref(),
            Some("postgres://app@db/shop")
        );
        let own = vars(Some("sqlite://bus.db")).or_database_url(general);
        assert_eq!(own.database_url.as_deref(), Some("sqlite://bus.db"));
        assert_eq!(
            vars(None).or_database_url(Some(String::new())).database_url,
            None
        );
    }

    /// A database URL of a database compiled into this build (`build()` refuses the others).
    fn compiled_url() -> &'static str {
        if cfg!(feature = "sqlite") {
            "sqlite://sales.db"
        } else if cfg!(feature = "postgres") {
            "postgres://postgres@127.0.0.1/postgres"
        } else {
            "Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;Password=x"
        }
    }

    #[test]
    fn reads_the_environment_with_human_durations() {
        let vars = [
            ("NIMBUS_BUS_APPLICATION", "Sales"),
            ("NIMBUS_BUS_INSTANCE", "sales-1"),
            ("NIMBUS_BUS_DATABASE_URL", compiled_url()),
            ("NIMBUS_BUS_PEEK_DELAY", "250ms"),
            ("NIMBUS_BUS_IDLE_POLL", "20ms"),
            ("NIMBUS_BUS_CONCURRENCY", "8"),
            ("NIMBUS_BUS_CREATE_QUEUES_ON_SEND", "true"),
            ("NIMBUS_BUS_STORAGE_LAYOUT", "shared_table"),
            ("NIMBUS_BUS_RECEIVE_BATCH", "1"),
            ("NIMBUS_BUS_TABLE_MAINTENANCE_INTERVAL", "1min"),
            ("NIMBUS_BUS_CONNECTION_LIMIT", "30"),
            ("NIMBUS_BUS_CONNECTION_IDLE_TIMEOUT", "2min"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let settings = BusSettings::from_vars(vars, ENV_PREFIX).expect("valid settings");
        assert_eq!(settings.peek_delay, Some(Duration::from_millis(250)));
        assert_eq!(settings.idle_poll, Some(Duration::from_millis(20)));
        assert_eq!(settings.concurrency, Some(8));
        assert_eq!(settings.storage_layout, Some(StorageLayout::SharedTable));
        assert_eq!(settings.receive_batch, Some(1));
        assert_eq!(settings.connection_limit, Some(30));
        assert_eq!(
            settings.connection_idle_timeout,
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            settings.table_maintenance_interval,
            Some(Duration::from_secs(60))
        );
        let endpoint = crate::Bus::builder()
            .settings(&settings)
            .build()
            .expect("a valid endpoint");
        assert_eq!(endpoint.input_queue(), "Sales");
    }

    #[test]
    fn the_claim_check_threshold_is_a_size_or_off() {
        let read = |value: &str| {
            BusSettings::from_vars(
                [(
                    "NIMBUS_BUS_CLAIM_CHECK_ABOVE".to_string(),
                    value.to_string(),
                )],
                ENV_PREFIX,
            )
        };
        assert_eq!(read("65536").unwrap().claim_check_above, Some(Some(65536)));
        assert_eq!(read("off").unwrap().claim_check_above, Some(None));
        let err = read("big").expect_err("refused").to_string();
        assert!(err.contains("\"off\""), "{err}");
        let builder = crate::Bus::builder().settings(&read("65536").unwrap());
        assert_eq!(
            builder.claim_check.as_ref().and_then(|c| c.threshold()),
            Some(65536)
        );
        let builder = crate::Bus::builder().settings(&read("off").unwrap());
        assert_eq!(builder.claim_check.and_then(|c| c.threshold()), None);
    }

    #[test]
    fn a_misspelt_variable_or_a_bad_duration_is_a_clear_error() {
        for (name, value) in [
            ("NIMBUS_BUS_PEAK_DELAY", "250ms"),
            ("NIMBUS_BUS_PEEK_DELAY", "soon"),
        ] {
            let err = BusSettings::from_vars([(name.to_string(), value.to_string())], ENV_PREFIX)
                .expect_err("refused")
                .to_string();
            assert!(err.contains("Fix:"), "{err}");
        }
        // A setting build() refuses is still refused: settings go through the same checks.
        let settings: BusSettings = serde_json::from_value(serde_json::json!({
            "application": "A",
            "instance": "a",
            "database_url": compiled_url(),
            "peek_delay": "1ms",
        }))
        .expect("parses");
        let err = crate::Bus::builder()
            .settings(&settings)
            .build()
            .expect_err("below the minimum peek delay")
            .to_string();
        assert!(err.contains("100 ms"), "{err}");
    }
}
