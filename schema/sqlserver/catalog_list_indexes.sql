-- Lists the index names of a table.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2)
-- Returns: name (sysname)
SELECT i.[name] FROM sys.indexes AS i
JOIN sys.tables AS t ON t.[object_id] = i.[object_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2 AND i.[name] IS NOT NULL;
