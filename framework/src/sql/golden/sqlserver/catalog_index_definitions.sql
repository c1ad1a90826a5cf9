SELECT i.[name] AS [IndexName], i.[type_desc] AS [IndexType],
    CAST(i.[has_filter] AS int) AS [Filtered], c.[name] AS [ColumnName],
    CAST(ic.[key_ordinal] AS int) AS [KeyOrdinal], CAST(ic.[is_included_column] AS int) AS [Included]
FROM sys.tables AS t
JOIN sys.indexes AS i ON i.[object_id] = t.[object_id]
JOIN sys.index_columns AS ic ON ic.[object_id] = i.[object_id] AND ic.[index_id] = i.[index_id]
JOIN sys.columns AS c ON c.[object_id] = ic.[object_id] AND c.[column_id] = ic.[column_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2 AND i.[name] IS NOT NULL
ORDER BY i.[name], ic.[key_ordinal], c.[name];