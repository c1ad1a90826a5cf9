-- Returns a row when a table exists.
-- Parameters: 1 schema name (text, a value; only 'main' matches), 2 table name (text, a value)
-- Returns: one constant column (1)
SELECT 1 FROM sqlite_schema WHERE type = 'table' AND ?1 = 'main' AND name = ?2
