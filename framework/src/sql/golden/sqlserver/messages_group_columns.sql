IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupKey')
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusMessages] ADD [GroupKey] varchar(255) NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupPlace')
ALTER TABLE [Zeb]]ra "x" 'y'].[NimbusMessages] ADD [GroupPlace] bigint NULL;