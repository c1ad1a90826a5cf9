-- Lists the tables of a schema (the queues of the table-per-queue layout, among others).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
-- Returns: name (sysname)
SELECT [name] FROM sys.tables
WHERE [schema_id] = SCHEMA_ID(@P1)
ORDER BY [name];
