-- Creates NimbusDeduplication (keys seen within a window: the deduplication keys of sends, per
-- destination queue, and the ids of messages an endpoint's inbox handled, per queue) and its
-- ExpiresAt index where missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1)
IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusDeduplication')
BEGIN
    CREATE TABLE {schema}.[NimbusDeduplication] (
        [Scope]     nvarchar(400) NOT NULL,
        [Key]       nvarchar(255) NOT NULL,
        [ExpiresAt] datetime2     NOT NULL,
        PRIMARY KEY NONCLUSTERED ([Scope], [Key])
    );
    CREATE NONCLUSTERED INDEX [Index_ExpiresAt]
    ON {schema}.[NimbusDeduplication]
    (
        [ExpiresAt] ASC
    );
END;
