-- Lists the queue tables of the database file: the tables with the columns every queue table has (Id, Headers, Body, RowVersion), so business tables beside them are never taken for queues.
-- Parameters: 1 schema name (text, a value; only 'main' matches)
-- Returns: name (text)
-- Nimbus's own tables (NimbusDelayedMessages has those columns too) are left out by the caller.
SELECT t.name FROM sqlite_schema AS t
WHERE t.type = 'table' AND ?1 = 'main' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\'
    AND (SELECT count(*) FROM pragma_table_info(t.name) AS c
         WHERE c.name IN ('Id', 'Headers', 'Body', 'RowVersion')) = 4
ORDER BY 1
