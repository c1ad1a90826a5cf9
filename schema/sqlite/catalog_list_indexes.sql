-- Lists the index names of a table.
-- Parameters: 1 schema name (text, a value; only 'main' matches), 2 table name (text, a value)
-- Returns: name (text)
SELECT name FROM sqlite_schema WHERE type = 'index' AND ?1 = 'main' AND tbl_name = ?2
