IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusBodies')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusBodies] (
        [Id]             uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
        [Queue]          nvarchar(255)    NOT NULL,
        [Body]           varbinary(max)   NULL,
        [Store]          nvarchar(255)    NULL,
        [Size]           bigint           NOT NULL,
        [StoredAt]       datetime2        NOT NULL DEFAULT SYSUTCDATETIME(),
        [Expires]        datetime2        NULL,
        [DeadLetteredAt] datetime2        NULL
    );
    CREATE NONCLUSTERED INDEX [Index_Expires] ON [Zeb]]ra "x" 'y'].[NimbusBodies] ([Expires]);
    CREATE NONCLUSTERED INDEX [Index_DeadLetteredAt] ON [Zeb]]ra "x" 'y'].[NimbusBodies] ([DeadLetteredAt]);
    CREATE NONCLUSTERED INDEX [Index_Queue] ON [Zeb]]ra "x" 'y'].[NimbusBodies] ([Queue]);
END;