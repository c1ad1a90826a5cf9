-- Lists the queue tables of a schema: the tables with the columns every queue table has (Id, Headers, Body, RowVersion), so business tables beside them are never taken for queues.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: name (sysname)
-- Nimbus's own tables (NimbusDelayedMessages has those columns too) are left out by the caller.
SELECT t.[name] FROM sys.tables AS t
WHERE t.[schema_id] = SCHEMA_ID(@P1)
    AND (SELECT COUNT(*) FROM sys.columns AS c
         WHERE c.[object_id] = t.[object_id]
             AND c.[name] IN (N'Id', N'Headers', N'Body', N'RowVersion')) = 4
ORDER BY t.[name];
