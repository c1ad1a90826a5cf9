-- Inserts one message of an ordered group, at a priority, into NimbusMessages (shared-table
-- layout) when it keeps both; placed as messages_insert_grouped.sql places it.
-- Parameters: 1 MessageId (uniqueidentifier), 2 Destination (nvarchar(255)), 3 Body (varbinary(max), the envelope with headers), 4 time to be received in ms (bigint, NULL for none), 5 absolute ExpiresAt (datetime2, NULL for none; wins over 4), 6 delay in ms (bigint, NULL for none), 7 absolute VisibleAfter (datetime2, NULL for none; wins over 6), 8 GroupKey (varchar(255)), 9 GroupPlace (bigint: the place a retry copy keeps, NULL for a first send), 10 Priority (bigint, stored as smallint: higher is received first, 0 normal)
-- The VALUES form (the visible time written out again), so that sends merge into one
-- multi-row insert. SYSUTCDATETIME() is read once per statement.
INSERT INTO {schema}.[NimbusMessages] ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt],
    [GroupKey], [GroupPlace], [Priority])
VALUES (@P1, @P2, @P3,
    COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))),
    COALESCE(@P5, CASE WHEN @P4 IS NULL THEN NULL ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, SYSUTCDATETIME())) END),
    @P8,
    COALESCE(@P9, DATEDIFF_BIG(microsecond, CAST('1970-01-01' AS datetime2),
        CASE WHEN COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))) > SYSUTCDATETIME()
             THEN COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME())))
             ELSE SYSUTCDATETIME() END)),
    @P10);
