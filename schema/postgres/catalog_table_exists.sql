-- Returns a row when a table exists.
-- Parameters: 1 schema name (text, a value), 2 table name (text, a value)
-- Returns: one constant column (1)
SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2
