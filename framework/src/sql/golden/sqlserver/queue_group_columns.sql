IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupKey')
ALTER TABLE [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] ADD [GroupKey] varchar(255) NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'GroupPosition')
ALTER TABLE [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] ADD [GroupPosition] bigint NULL;

IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'NotBefore')
ALTER TABLE [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] ADD [NotBefore] datetime NULL;