IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = N'NimbusSagas'
        AND c.[name] = N'CompletedAt')
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusSagas] ADD [CompletedAt] datetime2 NULL;