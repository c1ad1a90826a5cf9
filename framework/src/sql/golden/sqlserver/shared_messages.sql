IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusMessages')
CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusMessages] (
    [MessageId]    UNIQUEIDENTIFIER NOT NULL PRIMARY KEY,
    [Destination]  NVARCHAR(255)    NOT NULL,
    [Body]         VARBINARY(MAX)   NOT NULL,
    [VisibleAfter] DATETIME2        NOT NULL,
    [ExpiresAt]    DATETIME2        NULL
);