-- Opt-in (CreateMessageBodyComputedColumn): the body as readable text. Bodies are UTF-8 JSON, so
-- the bytes are read as varchar (single-byte or, with a UTF-8 collation, UTF-8 text).
-- @P1: the schema name, @P2: the queue name (values).
IF COL_LENGTH(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2), N'BodyString') IS NULL
ALTER TABLE {table}
ADD [BodyString] AS CAST([Body] AS varchar(max));
