-- Creates NimbusLimits (the slots of the endpoints' limits: a limit of N handlers at once or N
-- messages per period for a message type, or a key, has N rows in its scope; a handler holds
-- one locked from its receive to its commit, and a rate's row stays taken until ReadyAt; the
-- row of slot -1 counts the messages the limit held back).
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusLimits')
BEGIN
    CREATE TABLE {schema}.[NimbusLimits] (
        [Scope]   nvarchar(400) NOT NULL,
        [Slot]    int           NOT NULL,
        [ReadyAt] datetime2     NOT NULL,
        [Held]    bigint        NOT NULL DEFAULT 0,
        PRIMARY KEY ([Scope], [Slot])
    );
END;
