-- Creates NimbusPausedQueues where missing: the queues an operator paused. Every endpoint
-- that receives from a queue listed here stops taking its messages (sends still go in) until
-- the row is deleted; endpoints read the table once per peek delay.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusPausedQueues')
BEGIN
    CREATE TABLE {schema}.[NimbusPausedQueues] (
        [Queue]    nvarchar(255) NOT NULL PRIMARY KEY NONCLUSTERED,
        [PausedAt] datetime2     NOT NULL,
        [PausedBy] nvarchar(255) NOT NULL
    );
END;
