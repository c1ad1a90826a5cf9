CREATE INDEX IF NOT EXISTS {index_rowversion}
ON {table}
(
    "RowVersion" ASC
);
