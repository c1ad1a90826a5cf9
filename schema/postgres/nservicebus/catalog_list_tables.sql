-- Lists the queue tables of a schema in NServiceBus's PostgreSQL shape: the tables with its
-- columns (id, headers, body, seq, as PostgreSQL stores its unquoted names), so business tables,
-- NServiceBus's delayed and subscription tables and Nimbus's own tables are never taken for
-- queues.
-- Parameters: 1 schema name (text, a value)
-- Returns: table_name (text)
SELECT t.table_name::text FROM information_schema.tables AS t
WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE'
    AND (SELECT count(*) FROM information_schema.columns AS c
         WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name
             AND c.column_name IN ('id', 'headers', 'body', 'seq')) = 4
ORDER BY 1
