-- Lists the index names of a table.
-- Parameters: 1 schema name (text, a value), 2 table name (text, a value)
-- Returns: indexname (text)
SELECT indexname::text FROM pg_catalog.pg_indexes WHERE schemaname = $1 AND tablename = $2
