-- Adds the opt-in (CreateMessageBodyComputedColumn) BodyString column to a queue table where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 queue table name (sysname, passed as the value @P2)
-- NServiceBus's definition exactly (AddMessageBodyStringColumn): CAST(Body AS nvarchar(max)), so
-- a table shared with NServiceBus endpoints has one BodyString whoever added it. nvarchar reads
-- the bytes as UTF-16; queue_body_string_text.sql is the form that reads as the body's text.
-- The column is looked up by the names as values (sys.tables, sys.columns), not by
-- COL_LENGTH(QUOTENAME(...)), whose quoting Babelfish does differently for names with ' or ".
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'BodyString')
ALTER TABLE {table}
ADD [BodyString] AS CAST([Body] AS nvarchar(max));
