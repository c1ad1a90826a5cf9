-- Lists the tables of the database file (the queues of the table-per-queue layout, among others).
-- Parameters: 1 schema name (text, a value; only 'main' matches)
-- Returns: name (text)
SELECT name FROM sqlite_schema
WHERE type = 'table' AND ?1 = 'main' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
ORDER BY 1
