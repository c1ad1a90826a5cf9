-- Creates NimbusSagas (the state of each saga instance, as JSON, with the version its last
-- change gave it, and when it completed: a completed instance stays for a while, so that a
-- message arriving late finds it completed instead of starting it again) and its unique
-- (SagaType, CorrelationId) index where missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusSagas')
BEGIN
    CREATE TABLE {schema}.[NimbusSagas] (
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
    ON {schema}.[NimbusSagas]
    (
        [SagaType] ASC,
        [CorrelationId] ASC
    );
END;
