-- Creates a grouped queue table's index of retry copies by the place they keep in their group (GroupPosition first: NULL for every other row, so the look-up reads only the few retry copies before a place), where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_group_position}
ON {table}
(
    "GroupPosition" ASC,
    "GroupKey" ASC
);
