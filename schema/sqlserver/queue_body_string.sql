-- Adds the opt-in (CreateMessageBodyComputedColumn) BodyString column to a queue table where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 queue table name (sysname, passed as the value @P2)
-- NServiceBus's definition exactly (AddMessageBodyStringColumn): CAST(Body AS nvarchar(max)), so
-- a table shared with NServiceBus endpoints has one BodyString whoever added it. nvarchar reads
-- the bytes as UTF-16; for UTF-8 JSON bodies, CAST([Body] AS varchar(max)) reads them as text
-- (README, "SQL Server beside NServiceBus").
IF COL_LENGTH(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2), N'BodyString') IS NULL
ALTER TABLE {table}
ADD [BodyString] AS CAST([Body] AS nvarchar(max));
