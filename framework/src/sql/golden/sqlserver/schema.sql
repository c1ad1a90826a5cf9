IF SCHEMA_ID(@P1) IS NULL
BEGIN
    DECLARE @create_schema nvarchar(max) = N'CREATE SCHEMA ' + QUOTENAME(@P1);
    EXEC sys.sp_executesql @create_schema;
END;