-- Adds the opt-in BodyString column, readable as the body's text, to a queue table where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1), 2 queue table name (sysname, passed as the value @P2)
-- CAST(Body AS varchar(max)) reads the bytes in the database's default collation: a UTF-8 JSON
-- body reads as itself under a UTF-8 collation (SQL Server 2019+), and when it is ASCII under
-- any. queue_body_string.sql is NServiceBus's nvarchar form, for tables shared with it.
-- The column is looked up by the names as values (sys.tables, sys.columns), not by
-- COL_LENGTH(QUOTENAME(...)), whose quoting Babelfish does differently for names with ' or ".
IF NOT EXISTS (
    SELECT 1 FROM sys.columns AS c
    JOIN sys.tables AS t ON t.[object_id] = c.[object_id]
    WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2
        AND c.[name] = N'BodyString')
ALTER TABLE {table}
ADD [BodyString] AS CAST([Body] AS varchar(max));
