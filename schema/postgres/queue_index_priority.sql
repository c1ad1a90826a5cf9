-- Creates a priority queue table's receive index (highest priority first, then FIFO) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_priority}
ON {table}
(
    "Priority" DESC,
    "RowVersion" ASC
);
