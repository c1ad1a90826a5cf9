IF NOT EXISTS (
    SELECT 1 FROM sys.tables
    WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = N'NimbusDeduplication')
BEGIN
    CREATE TABLE [Zeb]]ra "x" 'y'].[NimbusDeduplication] (
        [Scope]     nvarchar(400) NOT NULL,
        [Key]       nvarchar(255) NOT NULL,
        [ExpiresAt] datetime2     NOT NULL,
        PRIMARY KEY NONCLUSTERED ([Scope], [Key])
    );
    CREATE NONCLUSTERED INDEX [Index_ExpiresAt]
    ON [Zeb]]ra "x" 'y'].[NimbusDeduplication]
    (
        [ExpiresAt] ASC
    );
END;