-- Returns a row when a table exists.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 table name (sysname, passed as the value @P2)
-- Returns: one constant column (1)
SELECT 1 FROM sys.tables
WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2;
