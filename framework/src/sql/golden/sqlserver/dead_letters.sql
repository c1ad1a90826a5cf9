IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusDeadLetters')
CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusDeadLetters] (
    [MessageId]           UNIQUEIDENTIFIER NOT NULL PRIMARY KEY,
    [OriginalDestination] NVARCHAR(255)    NULL,
    [Body]                VARBINARY(MAX)   NOT NULL,
    [DeliveryAttempts]    INT              NOT NULL,
    [FailedAt]            DATETIME2        NOT NULL DEFAULT SYSUTCDATETIME()
);