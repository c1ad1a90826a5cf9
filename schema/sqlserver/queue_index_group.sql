-- Creates a grouped queue table's group index (finds whether a group has an older message).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE NONCLUSTERED INDEX {index_group}
ON {table}
(
    [GroupKey] ASC,
    [RowVersion] ASC
)
