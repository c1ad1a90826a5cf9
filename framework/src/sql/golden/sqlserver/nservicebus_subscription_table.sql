IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2)
CREATE TABLE [Zeb]]ra "x" 'y'].[SubscriptionRouting] (
    [QueueAddress] NVARCHAR(200) NOT NULL,
    [Endpoint] NVARCHAR(200) NOT NULL,
    [Topic] NVARCHAR(200) NOT NULL,
    PRIMARY KEY CLUSTERED ([Endpoint], [Topic])
);