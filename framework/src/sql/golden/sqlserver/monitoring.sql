IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusMonitoring')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusMonitoring] (
        [ReportedAt]      datetime2        NOT NULL,
        [RunId]           uniqueidentifier NOT NULL,
        [Queue]           nvarchar(255)    NOT NULL,
        [Application]     nvarchar(255)    NOT NULL,
        [Instance]        nvarchar(255)    NOT NULL,
        [PeriodMs]        bigint           NOT NULL,
        [Handled]         bigint           NOT NULL,
        [Failed]          bigint           NOT NULL,
        [Retried]         bigint           NOT NULL,
        [DeadLettered]    bigint           NOT NULL,
        [QueueLength]     bigint           NULL,
        [ProcessingP50Us] bigint           NULL,
        [ProcessingP95Us] bigint           NULL,
        [CriticalP50Us]   bigint           NULL,
        [CriticalP95Us]   bigint           NULL,
        [ProcessingTimes] nvarchar(max)    NULL,
        [CriticalTimes]   nvarchar(max)    NULL,
        PRIMARY KEY CLUSTERED ([ReportedAt], [RunId], [Queue])
    );
END;