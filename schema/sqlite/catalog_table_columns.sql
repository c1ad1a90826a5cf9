-- Lists the columns of a table, to say why a table named like a queue is not one (none: no
-- such table).
-- Parameters: 1 schema name (text, a value; only 'main' has tables), 2 table name (text, a value)
-- Returns: name (text)
SELECT c.name FROM pragma_table_info(?2) AS c
WHERE ?1 = 'main'
ORDER BY c.cid
