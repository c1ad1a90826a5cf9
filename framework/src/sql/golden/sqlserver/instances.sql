IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusInstances')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusInstances] (
        [RunId]            uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,
        [Application]      nvarchar(255)    NOT NULL,
        [Instance]         nvarchar(255)    NOT NULL,
        [Host]             nvarchar(255)    NOT NULL,
        [ProcessId]        bigint           NOT NULL,
        [Version]          nvarchar(64)     NOT NULL,
        [Queues]           nvarchar(max)    NOT NULL,
        [Handlers]         nvarchar(max)    NOT NULL,
        [SharesName]       int              NOT NULL,
        [HeartbeatSeconds] int              NOT NULL,
        [StartedAt]        datetime2        NOT NULL,
        [LastSeenAt]       datetime2        NOT NULL,
        [StoppedAt]        datetime2        NULL
    );
END;