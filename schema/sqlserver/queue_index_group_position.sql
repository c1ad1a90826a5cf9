-- Creates a grouped queue table's index of retry copies by the place they keep in their group (GroupPosition first: NULL for every other row, so the look-up reads only the few retry copies before a place).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE NONCLUSTERED INDEX {index_group_position}
ON {table}
(
    [GroupPosition] ASC,
    [GroupKey] ASC
)
