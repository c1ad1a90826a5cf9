-- Adds the opt-in (CreateMessageBodyComputedColumn) BodyString column to a queue table where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 queue table name (sysname, passed as the value @P2)
-- The body as readable text: bodies are UTF-8 JSON, so the bytes are read as varchar (single-byte
-- or, with a UTF-8 collation, UTF-8 text).
IF COL_LENGTH(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2), N'BodyString') IS NULL
ALTER TABLE {table}
ADD [BodyString] AS CAST([Body] AS varchar(max));
