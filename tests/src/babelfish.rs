//! Babelfish for PostgreSQL, the SQL Server-compatible server the SQL Server suite also runs on:
//! how to tell it is the server, and the tests that fail there because of a gap in Babelfish,
//! not in Nimbus. Each gap names the statement, what Babelfish does with it, and why the
//! statement is right for SQL Server (Microsoft's T-SQL documentation; NServiceBus's statement
//! where it has one).
//!
//! A listed test still runs on Babelfish. It counts as a gap only when it fails with the gap's
//! symptom; any other failure is a failure, and a listed test that passes is reported so that
//! the list can shrink. On SQL Server itself the list does not apply.

/// One Babelfish gap and the tests it makes fail.
#[derive(Debug)]
pub struct Gap {
    /// The full names of the tests it makes fail.
    pub tests: &'static [&'static str],
    /// Texts one of which every failure this gap causes contains (an error's `Display` or its
    /// `Debug`, which escapes quotes).
    pub symptoms: &'static [&'static str],
    /// The statement (or statement form) Babelfish does not run as SQL Server does.
    pub statement: &'static str,
    /// What Babelfish does with it.
    pub babelfish: &'static str,
    /// Why the statement is right on SQL Server.
    pub sql_server: &'static str,
}

/// Whether a failure is Babelfish 4.3's catalog race: a statement that checks or creates one
/// test's table or index (`CREATE INDEX`, the catalog views) fails on a table another test is
/// dropping or making at that moment, with `column "id" of relation "dropped" does not exist`
/// (its log: `acl.c`). Seen once in three runs of the suite; SQL Server has no such race. The
/// harness runs such a test once more: a real missing column fails again.
pub fn is_catalog_race(message: &str) -> bool {
    (message.contains("\" of relation \"") || message.contains("\\\" of relation \\\""))
        && message.contains("does not exist")
}

/// Every known gap, as measured on Babelfish 4.2 and 4.3.
pub const GAPS: &[Gap] = &[
    Gap {
        tests: &[
            "table_per_queue::awkward_queue_names_work",
            "sqlserver::hostile_schema_names_work::table_per_queue",
            "sqlserver::hostile_schema_names_work::shared_table",
        ],
        symptoms: &[
            r#"syntax error at or near "]""#,
            r#"syntax error at or near \"]\""#,
        ],
        statement: "a name with a right bracket, quoted as SQL Server quotes it: \
                    CREATE SCHEMA [nimbus t\"st [id]] o'k], CREATE TABLE [schema].[[bracketed]] queue] (...)",
        babelfish: "ends a bracketed identifier at the first ]: 'syntax error at or near \"]\"' \
                    (code 33557097)",
        sql_server: "Microsoft's 'Database identifiers' and QUOTENAME (Transact-SQL): a right \
                     bracket inside a bracketed identifier is written twice (]]), which is what \
                     QUOTENAME returns; names without ] run on both",
    },
    Gap {
        tests: &[
            "table_per_queue::concurrency_limit_is_never_exceeded",
            "shared_table::concurrency_limit_is_never_exceeded",
            "table_per_queue::a_slow_handler_does_not_hide_other_processes_messages",
            "shared_table::a_slow_handler_does_not_hide_other_processes_messages",
            "table_per_queue::peeks_do_not_count_rows_other_instances_hold",
            "shared_table::peeks_do_not_count_rows_other_instances_hold",
            "table_per_queue::a_paused_queue_stops_receiving_until_resumed",
            "shared_table::a_paused_queue_stops_receiving_until_resumed",
            "table_per_queue::a_limit_of_handlers_at_once_holds_across_instances",
            "shared_table::a_limit_of_handlers_at_once_holds_across_instances",
            "table_per_queue::a_limit_per_key_holds_each_key_and_lets_others_run",
            "shared_table::a_limit_per_key_holds_each_key_and_lets_others_run",
        ],
        symptoms: &[
            "receivers ran in parallel",
            "handled while the slow handler runs",
            "while instance A holds every message",
            "instance A holds all four messages",
            "peeks counted rows A holds",
            "nothing received while paused",
            "the paused queue is peeked twice more with its messages in it",
            "the paused queue keeps every message sent while paused",
            "the two slots are held and the limit holds messages back",
            "a handler of each key at the gate, and messages held back",
        ],
        statement: "the receive: DELETE ... WHERE [RowVersion] = (SELECT TOP (1) [RowVersion] \
                    FROM queue WITH (UPDLOCK, READPAST, ROWLOCK) ORDER BY [RowVersion]) \
                    (queue_receive.sql, messages_receive.sql); a limit's slot is taken the same \
                    way (limit_take.sql)",
        babelfish: "accepts READPAST and ignores it: a second receiver waits for the row the \
                    first one holds and then finds it gone, so the receivers of a queue take \
                    turns instead of running side by side (no message is received twice, \
                    throughput is one receive at a time); the peek counts held rows too, so a \
                    slow handler holds back the messages behind it; and a receive that started \
                    before its queue was paused can wait in its statement past the pause, then \
                    take a message sent after it (seen on both layouts: the message is handled, or \
                    taken and held so that the paused queue's depth falls short); a limit's full \
                    slots are waited for instead of skipped, so a message over a limit of \
                    handlers at once waits in its receive for a slot rather than in its queue",
        sql_server: "Table Hints (Transact-SQL): READPAST makes the Database Engine skip rows \
                     other transactions have locked, and UPDLOCK with ROWLOCK locks the row the \
                     receive takes; NServiceBus's SQL Server transport receives WITH (UPDLOCK, \
                     READPAST, ROWLOCK) the same way",
    },
    Gap {
        tests: &["table_per_queue::a_run_time_queue_name_over_the_limit_is_refused"],
        symptoms: &["the queue with the longest name the database allows holds its message"],
        statement: "a table named with 64 to 128 characters, e.g. CREATE TABLE [schema].[LLL…(128)] \
                    (...), then found again by name in sys.tables",
        babelfish: "keeps PostgreSQL's 63-byte identifiers: the table is made and used under its \
                    long name, but sys.tables lists it shortened to 63 characters, lower-cased, \
                    with an md5 suffix, so a catalog lookup by the name finds nothing",
        sql_server: "Database identifiers (Transact-SQL): regular and delimited identifiers are \
                     sysname, up to 128 characters, and sys.tables lists them as created",
    },
    Gap {
        tests: &["sqlserver::a_clustered_rowversion_index_is_reported"],
        symptoms: &["made no CLUSTERED index"],
        statement: "CREATE CLUSTERED INDEX [Index_RowVersion] ON queue ([RowVersion]) (how \
                    NServiceBus transports before 3.1.5, 4.3.2, 5.0.3 and 6.0.1 made it; the \
                    test builds such a table)",
        babelfish: "has no clustered indexes: CREATE CLUSTERED INDEX makes an ordinary index \
                    that sys.indexes lists as NONCLUSTERED, so there is no old table to report",
        sql_server: "CREATE INDEX (Transact-SQL) and sys.indexes (type 1 = CLUSTERED): the check \
                     reports a clustered Index_RowVersion with the statements that replace it, \
                     as NServiceBus's non-clustered index upgrade guide asks",
    },
];

/// The gap that explains a failure of `test` with `message`, if one does.
pub fn explaining(test: &str, message: &str) -> Option<&'static Gap> {
    listed(test).filter(|gap| gap.symptoms.iter().any(|s| message.contains(s)))
}

/// The gap `test` is listed under, if any.
pub fn listed(test: &str) -> Option<&'static Gap> {
    GAPS.iter().find(|gap| gap.tests.contains(&test))
}

impl Gap {
    /// The lines a run prints for a test this gap made fail.
    pub fn report(&self, test: &str) -> String {
        format!(
            "Babelfish gap, not a Nimbus failure: {test}\n  statement: {}\n  Babelfish: {}\n  \
             SQL Server: {}",
            self.statement, self.babelfish, self.sql_server
        )
    }
}

/// The server's version line when the SQL Server of `connection_string` is Babelfish for
/// PostgreSQL (`SELECT @@VERSION` names it), `None` for SQL Server itself.
pub async fn version(connection_string: &str) -> Option<String> {
    let mut client = nimbus::connect_sql_server(connection_string)
        .await
        .unwrap_or_else(|e| panic!("connect to the SQL Server of NIMBUS_SQLSERVER: {e}"));
    let stream = client
        .simple_query("SELECT CAST(@@VERSION AS nvarchar(4000))")
        .await
        .unwrap_or_else(|e| panic!("SELECT @@VERSION: {e}"));
    let row = stream
        .into_row()
        .await
        .unwrap_or_else(|e| panic!("SELECT @@VERSION: {e}"));
    let version: Option<&str> = row.as_ref().and_then(|r| r.get(0));
    let version = version.unwrap_or_default().to_string();
    version.contains("Babelfish").then_some(version)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_catalog_race_is_told_from_other_failures() {
        let race = "called `Result::unwrap()` on an `Err` value: SQL Server failed while creating \
                    index Index_Expires of queue table \"Poison\": Token error: 'column \"id\" of \
                    relation \"dropped\" does not exist' on server BABELFISH";
        assert!(super::is_catalog_race(race));
        assert!(super::is_catalog_race(&format!("{race:?}")));
        assert!(!super::is_catalog_race(
            "queue \"Sales\" does not exist: no endpoint has created it"
        ));
    }
}
