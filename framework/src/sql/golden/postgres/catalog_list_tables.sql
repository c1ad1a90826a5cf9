-- Lists the tables of a schema (the queues of the table-per-queue layout, among others).
-- Parameters: 1 schema name (text, a value)
-- Returns: table_name (text)
SELECT table_name::text FROM information_schema.tables
WHERE table_schema = $1 AND table_type = 'BASE TABLE'
ORDER BY 1
