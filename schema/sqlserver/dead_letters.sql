-- Creates NimbusDeadLetters (seed 003) where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusDeadLetters')
CREATE TABLE {schema}.[NimbusDeadLetters] (
    [MessageId]           UNIQUEIDENTIFIER NOT NULL PRIMARY KEY,
    [OriginalDestination] NVARCHAR(255)    NULL,
    [Body]                VARBINARY(MAX)   NOT NULL,
    [DeliveryAttempts]    INT              NOT NULL,
    [FailedAt]            DATETIME2        NOT NULL DEFAULT SYSUTCDATETIME()
);
