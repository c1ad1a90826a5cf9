IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusLimits')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusLimits] (
        [Scope]   nvarchar(400) NOT NULL,
        [Slot]    int           NOT NULL,
        [ReadyAt] datetime2     NOT NULL,
        [Held]    bigint        NOT NULL DEFAULT 0,
        PRIMARY KEY ([Scope], [Slot])
    );
END;