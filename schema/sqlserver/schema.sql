-- Creates the schema Nimbus's tables live in, where it is missing.
-- Parameters: 1 schema name (sysname, passed as the value @P1, e.g. N'dbo')
IF SCHEMA_ID(@P1) IS NULL
BEGIN
    DECLARE @create_schema nvarchar(max) = N'CREATE SCHEMA ' + QUOTENAME(@P1);
    EXEC sys.sp_executesql @create_schema;
END;
