//! Where a message to an address goes: the bus's own schema, another schema of the same
//! database, or (SQL Server) another database on the same server — and a clear error where the
//! bus's database cannot reach the place an address names from inside its own transaction.

use super::StorageLayout;
use crate::error::{NimbusError, Result};
use crate::names::{AddressForm, QueueName, SchemaName};
use crate::sql::Dialect;

/// `queue` as this bus writes to it: an address of the bus's own schema (compared as the
/// database compares names) becomes the plain queue, so that one queue has one name; an address
/// the database cannot reach within one transaction is refused, saying what to do instead.
pub(crate) fn resolve(
    dialect: &Dialect,
    own: &SchemaName,
    layout: StorageLayout,
    queue: &QueueName,
) -> Result<QueueName> {
    let (schema, catalog) = (queue.schema(), queue.catalog());
    if schema.is_none() && catalog.is_none() {
        return Ok(queue.clone());
    }
    let same = |a: &str, b: &str| {
        a == b || (dialect.names_ignore_case && a.to_lowercase() == b.to_lowercase())
    };
    let own_schema = schema.is_none_or(|s| same(s.as_str(), own.as_str()));
    if catalog.is_none() && own_schema {
        return Ok(queue.unqualified());
    }
    let refuse = |what: String, fix: &str| Err(NimbusError::config(what, fix.to_string()));
    match dialect.address_form {
        AddressForm::OwnSchemaOnly => refuse(
            format!(
                "the address {queue} names another schema or database: on {} a bus reaches only \
                 the queues of its own database file. Another file (an attached database) \
                 cannot take the send inside this bus's transaction: in WAL mode, which Nimbus \
                 runs SQLite in, SQLite commits each attached file on its own, so the send \
                 could commit without the receive that made it, or the other way round",
                dialect.name
            ),
            "keep the queues that exchange messages in one database file, or run a bus on the \
             other file and send from there",
        ),
        AddressForm::Schemas if catalog.is_some() => refuse(
            format!(
                "the address {queue} names another database: {} cannot write to another database \
                 inside this bus's transaction, so the send could not commit with the rest",
                dialect.name
            ),
            "keep the queues that exchange messages in schemas of one database \
             (queue@[schema]), or run a bus on the other database and send from there",
        ),
        _ if layout == StorageLayout::SharedTable => refuse(
            format!(
                "the address {queue} names another schema or database: sending there from the \
                 shared-table layout is not supported yet"
            ),
            "use StorageLayout::TablePerQueue on both sides, or keep both endpoints in one \
             schema",
        ),
        _ => Ok(queue.clone()),
    }
}

#[cfg(all(test, feature = "sqlite", feature = "postgres", feature = "sqlserver"))]
mod tests {
    use super::*;
    use crate::sql::{POSTGRES, SQLITE, SQLSERVER};

    fn address(text: &str) -> QueueName {
        QueueName::parse(text).unwrap()
    }

    #[test]
    fn the_own_schema_becomes_the_plain_queue() {
        let own = SchemaName::new("Sales").unwrap();
        let plain = QueueName::new("Orders").unwrap();
        let table = StorageLayout::TablePerQueue;
        assert_eq!(
            resolve(&POSTGRES, &own, table, &address("Orders@Sales")).unwrap(),
            plain
        );
        // PostgreSQL compares names exactly: "sales" is another schema.
        assert_eq!(
            resolve(&POSTGRES, &own, table, &address("Orders@sales")).unwrap(),
            address("Orders@sales")
        );
        // SQL Server's default collations do not.
        assert_eq!(
            resolve(&SQLSERVER, &own, table, &address("Orders@[sales]")).unwrap(),
            plain
        );
        assert_eq!(
            resolve(&SQLITE, &own, table, &address("Orders@Sales")).unwrap(),
            plain
        );
    }

    #[test]
    fn tables_of_other_schemas_and_databases_are_quoted_in_full() {
        let own = SchemaName::new("dbo").unwrap();
        assert_eq!(
            SQLSERVER.table(&own, &address("Invoices@[bill]]ing]@[Accounts]")),
            "[Accounts].[bill]]ing].[Invoices]"
        );
        assert_eq!(
            SQLSERVER.table(&own, &address("Invoices@[]@[Accounts]")),
            "[Accounts].[dbo].[Invoices]"
        );
        assert_eq!(
            POSTGRES.table(&own, &address(r#""bill""ing"."Invoices""#)),
            r#""bill""ing"."Invoices""#
        );
        assert_eq!(
            POSTGRES.table(&own, &address("Invoices")),
            r#""dbo"."Invoices""#
        );
    }

    #[test]
    fn places_a_database_cannot_reach_are_refused_with_the_way_out() {
        let own = SchemaName::new("dbo").unwrap();
        let table = StorageLayout::TablePerQueue;
        let other_catalog = address("Orders@[dbo]@[Billing]");
        assert_eq!(
            resolve(&SQLSERVER, &own, table, &other_catalog).unwrap(),
            other_catalog
        );
        let err = resolve(&POSTGRES, &own, table, &other_catalog)
            .unwrap_err()
            .to_string();
        assert!(err.contains("another database"), "{err}");
        let err = resolve(&SQLITE, &own, table, &address("Orders@billing"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("one database file"), "{err}");
        // NServiceBus's PostgreSQL shape reaches other schemas as the seed 000 tables do.
        assert_eq!(
            resolve(
                &POSTGRES,
                &own,
                StorageLayout::NServiceBusPostgreSql,
                &address("Orders@billing")
            )
            .unwrap(),
            address("Orders@billing")
        );
        let err = resolve(
            &POSTGRES,
            &own,
            StorageLayout::SharedTable,
            &address("Orders@billing"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("shared-table layout"), "{err}");
    }
}
