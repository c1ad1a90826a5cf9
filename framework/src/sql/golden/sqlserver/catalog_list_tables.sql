SELECT t.[name] FROM sys.tables AS t
WHERE t.[schema_id] = SCHEMA_ID(@P1)
    AND (SELECT COUNT(*) FROM sys.columns AS c
         WHERE c.[object_id] = t.[object_id]
             AND c.[name] IN (N'Id', N'Headers', N'Body', N'RowVersion')) = 4
ORDER BY t.[name];