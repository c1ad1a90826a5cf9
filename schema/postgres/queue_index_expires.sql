-- Creates a queue table's Expires index (used to purge expired messages) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_expires}
ON {table}
(
    "Expires" ASC
)
INCLUDE
(
    "Id",
    "RowVersion"
);
