SELECT c.[name] FROM sys.columns AS c
JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
ORDER BY c.[column_id];