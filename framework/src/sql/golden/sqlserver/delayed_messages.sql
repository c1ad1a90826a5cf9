IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusDelayedMessages')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] (
        [Id]             uniqueidentifier NOT NULL,
        [Destination]    nvarchar(255)    NOT NULL,
        [Due]            datetime2        NOT NULL,
        [CorrelationId]  varchar(255)     NULL,
        [ReplyToAddress] varchar(255)     NULL,
        [Expires]        datetime         NULL,
        [Headers]        nvarchar(max)    NOT NULL,
        [Body]           varbinary(max)   NULL,
        [RowVersion]     bigint           IDENTITY(1,1) NOT NULL
    );
    CREATE NONCLUSTERED INDEX [Index_Due]
    ON [Zeb]]ra "x" 'y'].[NimbusDelayedMessages]
    (
        [Due] ASC
    );
END;