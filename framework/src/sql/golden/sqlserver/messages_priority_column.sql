IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'Priority')
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusMessages] ADD [Priority] smallint NOT NULL DEFAULT 0;