CREATE INDEX IF NOT EXISTS {index_expires}
ON {table}
(
    "Expires" ASC
)
INCLUDE
(
    "Id",
    "RowVersion"
);
