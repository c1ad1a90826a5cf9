-- The seed-003 table, created only when missing. @P1: the schema name (a value).
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusMessages')
BEGIN
    CREATE TABLE {schema}.[NimbusMessages] (
        [MessageId]    UNIQUEIDENTIFIER NOT NULL PRIMARY KEY,
        [Destination]  NVARCHAR(255)    NOT NULL,
        [Body]         VARBINARY(MAX)   NOT NULL,
        [VisibleAfter] DATETIME2        NOT NULL,
        [ExpiresAt]    DATETIME2        NULL
    );
    CREATE INDEX [IX_NimbusMessages_Dequeue]
        ON {schema}.[NimbusMessages] ([Destination], [VisibleAfter])
        INCLUDE ([ExpiresAt]);
END;
