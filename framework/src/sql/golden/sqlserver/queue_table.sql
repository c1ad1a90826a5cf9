IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2)
CREATE TABLE [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"] (
    [Id]             uniqueidentifier NOT NULL,
    [CorrelationId]  varchar(255)     NULL,
    [ReplyToAddress] varchar(255)     NULL,
    [Recoverable]    bit              NOT NULL,
    [Expires]        datetime         NULL,
    [Headers]        nvarchar(max)    NOT NULL,
    [Body]           varbinary(max)   NULL,
    [RowVersion]     bigint           IDENTITY(1,1) NOT NULL
);