SELECT [name] FROM sys.tables
WHERE [schema_id] = SCHEMA_ID(@P1)
ORDER BY [name];