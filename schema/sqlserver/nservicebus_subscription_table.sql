-- Creates NServiceBus's subscription table (its SQL Server transport's
-- CreateSubscriptionTableText, the same columns and key) where it is missing, for a bus that
-- shares subscriptions with NServiceBus endpoints.
-- Parameters: 1 schema name (sysname), 2 table name (sysname)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2)
CREATE TABLE {table} (
    [QueueAddress] NVARCHAR(200) NOT NULL,
    [Endpoint] NVARCHAR(200) NOT NULL,
    [Topic] NVARCHAR(200) NOT NULL,
    PRIMARY KEY CLUSTERED ([Endpoint], [Topic])
);
