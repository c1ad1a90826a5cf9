-- Creates the unique Seq index (the FIFO order of receive and peek) where missing: the index the
-- table's UNIQUE constraint makes, for a table created without it.
-- Parameters: none
CREATE UNIQUE INDEX IF NOT EXISTS {index_seq}
ON {table}
(
    Seq ASC
);
