-- Lists the columns of a table, to say why a table named like a queue is not one (none: no
-- such table).
-- Parameters: 1 schema name (text, a value), 2 table name (text, a value)
-- Returns: column_name (text)
SELECT column_name::text FROM information_schema.columns
WHERE table_schema = $1 AND table_name = $2
ORDER BY ordinal_position
