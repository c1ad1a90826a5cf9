-- Creates a queue table's Expires index (used to purge expired messages) where missing.
-- Parameters: none
-- SQLite has no INCLUDE: Id and RowVersion are trailing key columns, which cover the same queries.
CREATE INDEX IF NOT EXISTS {index_expires}
ON {table}
(
    "Expires" ASC,
    "Id",
    "RowVersion"
);
