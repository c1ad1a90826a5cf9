-- Creates NimbusBodies (message bodies stored apart from their queue rows by the claim check:
-- the queue row carries the body's Id in its Nimbus.ClaimCheck header) where it is missing.
-- Body is NULL when the body is in an object store (Store names it).
-- Queue is where its message was written; Expires its message's; DeadLetteredAt is set while
-- its message is a dead letter.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusBodies')
BEGIN
    CREATE TABLE {schema}.[NimbusBodies] (
        [Id]             uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
        [Queue]          nvarchar(255)    NOT NULL,
        [Body]           varbinary(max)   NULL,
        [Store]          nvarchar(255)    NULL,
        [Size]           bigint           NOT NULL,
        [StoredAt]       datetime2        NOT NULL DEFAULT SYSUTCDATETIME(),
        [Expires]        datetime2        NULL,
        [DeadLetteredAt] datetime2        NULL
    );
    CREATE NONCLUSTERED INDEX [Index_Expires] ON {schema}.[NimbusBodies] ([Expires]);
    CREATE NONCLUSTERED INDEX [Index_DeadLetteredAt] ON {schema}.[NimbusBodies] ([DeadLetteredAt]);
    CREATE NONCLUSTERED INDEX [Index_Queue] ON {schema}.[NimbusBodies] ([Queue]);
END;
