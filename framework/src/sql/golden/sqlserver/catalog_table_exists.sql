SELECT 1 FROM sys.tables
WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2;