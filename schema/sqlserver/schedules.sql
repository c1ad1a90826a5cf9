-- Creates NimbusSchedules where missing: one row per recurring message an endpoint declares,
-- keyed by endpoint and schedule name, with its next due time (database time, UTC), what it
-- fired last and whether an operator paused it. Every instance of the endpoint reads it; the
-- one whose update of a due row commits sends that tick's message in the same transaction.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusSchedules')
BEGIN
    CREATE TABLE {schema}.[NimbusSchedules] (
        [Endpoint]    nvarchar(255) NOT NULL,
        [Name]        nvarchar(255) NOT NULL,
        [Cron]        nvarchar(255) NULL,
        [EveryMs]     bigint        NULL,
        [Target]      nvarchar(255) NOT NULL,
        [Missed]      nvarchar(32)  NOT NULL,
        [NextDue]     datetime2     NOT NULL,
        [Version]     bigint        NOT NULL,
        [Fired]       bigint        NOT NULL,
        [MissedTicks] bigint        NOT NULL,
        [LastDue]     datetime2     NULL,
        [LastFiredAt] datetime2     NULL,
        [LastFiredBy] nvarchar(255) NULL,
        [PausedAt]    datetime2     NULL,
        [PausedBy]    nvarchar(255) NULL,
        [DeclaredAt]  datetime2     NOT NULL,
        PRIMARY KEY NONCLUSTERED ([Endpoint], [Name])
    );
END;
