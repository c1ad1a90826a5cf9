IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusSagas')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusSagas] (
        [Id]            uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
        [SagaType]      nvarchar(255)    NOT NULL,
        [CorrelationId] nvarchar(255)    NOT NULL,
        [State]         nvarchar(max)    NOT NULL,
        [Version]       bigint           NOT NULL,
        [StartedAt]     datetime2        NOT NULL,
        [UpdatedAt]     datetime2        NOT NULL,
        [CompletedAt]   datetime2        NULL
    );
    CREATE UNIQUE NONCLUSTERED INDEX [Index_Correlation]
    ON [Zeb]]ra "x" 'y'].[NimbusSagas]
    (
        [SagaType] ASC,
        [CorrelationId] ASC
    );
END;