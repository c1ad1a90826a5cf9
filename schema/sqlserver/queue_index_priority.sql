-- Creates a priority queue table's receive index (highest priority first, then FIFO).
-- Parameters: none
-- A bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE NONCLUSTERED INDEX {index_priority}
ON {table}
(
    [Priority] DESC,
    [RowVersion] ASC
)
