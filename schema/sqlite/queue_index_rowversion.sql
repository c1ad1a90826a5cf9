-- Creates a queue table's RowVersion index (the FIFO order of receive and peek) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS {index_rowversion}
ON {table}
(
    "RowVersion" ASC
);
