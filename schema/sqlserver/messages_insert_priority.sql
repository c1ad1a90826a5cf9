-- Inserts one message of a destination into NimbusMessages (shared-table layout) at its
-- priority, visible after its delay.
-- Parameters: 1 MessageId (uniqueidentifier), 2 Destination (nvarchar(255)), 3 Body (varbinary(max), the envelope with headers), 4 time to be received in ms (bigint, NULL for none), 5 absolute ExpiresAt (datetime2, NULL for none; wins over 4), 6 delay in ms (bigint, NULL for none), 7 absolute VisibleAfter (datetime2, NULL for none; wins over 6), 8 Priority (bigint, stored as smallint: higher is received first, 0 normal)
INSERT INTO {schema}.[NimbusMessages] ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt], [Priority])
VALUES (@P1, @P2, @P3,
    COALESCE(@P7, DATEADD(millisecond, COALESCE(@P6, 0) % 1000, DATEADD(second, COALESCE(@P6, 0) / 1000, SYSUTCDATETIME()))),
    COALESCE(@P5, CASE WHEN @P4 IS NULL THEN NULL ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, SYSUTCDATETIME())) END),
    @P8);
