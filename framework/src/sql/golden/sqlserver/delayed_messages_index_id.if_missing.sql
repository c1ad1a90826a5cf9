IF NOT EXISTS (
    SELECT 1
    FROM sys.tables AS t
    JOIN sys.indexes AS i ON i.[object_id] = t.[object_id]
    LEFT JOIN sys.index_columns AS ic ON ic.[object_id] = i.[object_id]
        AND ic.[index_id] = i.[index_id] AND ic.[key_ordinal] = 1
    LEFT JOIN sys.columns AS c ON c.[object_id] = ic.[object_id] AND c.[column_id] = ic.[column_id]
    LEFT JOIN sys.index_columns AS ic2 ON ic2.[object_id] = i.[object_id]
        AND ic2.[index_id] = i.[index_id] AND ic2.[key_ordinal] = 2
    LEFT JOIN sys.columns AS c2 ON c2.[object_id] = ic2.[object_id] AND c2.[column_id] = ic2.[column_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND (i.[name] = @P3
             OR (i.[type] = 2 AND c.[name] = @P4 AND (@P5 = N'' OR c2.[name] = @P5))))
CREATE INDEX [NimbusDelayedMessages_Index_Id]
    ON [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] ([Id]);