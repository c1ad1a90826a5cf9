IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusSubscriptions')
CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusSubscriptions] (
    [TopicName]       NVARCHAR(255) NOT NULL,
    [SubscriberQueue] NVARCHAR(255) NOT NULL,
    [LastSeenAt]      DATETIME2     NOT NULL DEFAULT SYSUTCDATETIME(),
    PRIMARY KEY ([TopicName], [SubscriberQueue])
);