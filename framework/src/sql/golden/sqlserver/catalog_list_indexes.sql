SELECT i.[name] FROM sys.indexes AS i
JOIN sys.tables AS t ON t.[object_id] = i.[object_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2 AND i.[name] IS NOT NULL;