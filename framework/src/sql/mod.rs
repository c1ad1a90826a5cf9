//! SQL text: every statement of every dialect comes from the files in `schema/<database>/`
//! (`include_str!`), rendered with quoted identifiers only. Nothing outside this module holds
//! SQL; values are always parameters.

mod dialect;
mod multi_row;
mod script;
#[cfg(feature = "postgres")]
mod split;
mod statements;
mod watch;

#[cfg(feature = "postgres")]
pub(crate) use dialect::POSTGRES;
#[cfg(feature = "sqlite")]
pub(crate) use dialect::SQLITE;
#[cfg(feature = "sqlserver")]
pub(crate) use dialect::SQLSERVER;
pub(crate) use dialect::{Dialect, Placeholder};
pub(crate) use multi_row::multi_row_insert;
pub(crate) use script::{creation_script, dialect_named, ordered_groups_script, priorities_script};
#[cfg(feature = "postgres")]
pub(crate) use split::statements_of;
pub(crate) use statements::{
    IndexDefinition, IndexSql, NServiceBusSubscriptionSql, QueueColumns, QueueSql, SchemaSql,
};
#[cfg(test)]
pub(crate) use watch::WatchSql;
pub(crate) use watch::{watch_sql, ReadyPart};

#[cfg(test)]
mod citus_rules;
#[cfg(test)]
mod golden_tests;
