-- Creates NimbusSubscriptions (seed 003) where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusSubscriptions')
CREATE TABLE {schema}.[NimbusSubscriptions] (
    [TopicName]       NVARCHAR(255) NOT NULL,
    [SubscriberQueue] NVARCHAR(255) NOT NULL,
    [LastSeenAt]      DATETIME2     NOT NULL DEFAULT SYSUTCDATETIME(),
    PRIMARY KEY ([TopicName], [SubscriberQueue])
);
