IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusLeases')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusLeases] (
        [LeaseId]        uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
        [Queue]          nvarchar(255)    NOT NULL,
        [LeasedUntil]    datetime2        NOT NULL,
        [LeasedBy]       nvarchar(255)    NOT NULL,
        [Id]             nvarchar(255)    NOT NULL,
        [CorrelationId]  varchar(255)     NULL,
        [ReplyToAddress] varchar(255)     NULL,
        [Expires]        datetime         NULL,
        [Headers]        nvarchar(max)    NOT NULL,
        [Body]           varbinary(max)   NULL
    );
    CREATE NONCLUSTERED INDEX [Index_Queue]
    ON [Zeb]]ra "x" 'y'].[NimbusLeases]
    (
        [Queue] ASC,
        [LeasedUntil] ASC
    );
END;