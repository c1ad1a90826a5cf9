-- Creates a grouped queue table's index of retry copies by the place they keep in their group, where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_group_position}
ON {table}
(
    "GroupKey" ASC,
    "GroupPosition" ASC
);
