IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusPausedQueues')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusPausedQueues] (
        [Queue]    nvarchar(255) NOT NULL PRIMARY KEY NONCLUSTERED,
        [PausedAt] datetime2     NOT NULL,
        [PausedBy] nvarchar(255) NOT NULL
    );
END;