-- Lists the queue tables of a schema: the tables with the columns every queue table has (Id, Headers, Body, RowVersion), so business tables beside them are never taken for queues.
-- Parameters: 1 schema name (text, a value)
-- Returns: table_name (text)
-- Nimbus's own tables (NimbusDelayedMessages has those columns too) are left out by the caller.
SELECT t.table_name::text FROM information_schema.tables AS t
WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE'
    AND (SELECT count(*) FROM information_schema.columns AS c
         WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name
             AND c.column_name IN ('Id', 'Headers', 'Body', 'RowVersion')) = 4
ORDER BY 1
