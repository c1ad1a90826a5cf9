-- Creates a grouped queue table's group index (finds whether a group has an older message) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_group}
ON {table}
(
    "GroupKey" ASC,
    "RowVersion" ASC
);
