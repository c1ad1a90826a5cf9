-- Lists the columns of a table, to say why a table named like a queue is not one (none: no
-- such table).
-- Parameters: 1 schema name (sysname, a value), 2 table name (sysname, a value)
-- Returns: name (sysname)
SELECT c.[name] FROM sys.columns AS c
JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
ORDER BY c.[column_id];
