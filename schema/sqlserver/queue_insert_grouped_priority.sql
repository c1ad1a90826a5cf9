-- Inserts one message of an ordered group, at a priority, into a queue table that keeps both.
-- Parameters: 1 Id (uniqueidentifier), 2 CorrelationId (varchar(255)), 3 ReplyToAddress (varchar(255)), 4 time to be received in ms (bigint, NULL for none), 5 Headers (nvarchar(max)), 6 Body (varbinary(max)), 7 absolute Expires (datetime, NULL for none; wins over 4), 8 GroupKey (varchar(255)), 9 GroupPosition (bigint: the place a retry copy keeps, NULL for a first send), 10 not before, in ms from now (bigint, NULL: at once), 11 Priority (bigint, stored as smallint: higher is received first, 0 normal)
INSERT INTO {table} ([Id], [CorrelationId], [ReplyToAddress], [Recoverable], [Expires], [Headers], [Body],
    [GroupKey], [GroupPosition], [NotBefore], [Priority])
VALUES (@P1, @P2, @P3, 1,
    COALESCE(@P7,
        CASE WHEN @P4 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, GETUTCDATE())) END),
    @P5, @P6, @P8, @P9,
    CASE WHEN @P10 IS NULL THEN NULL
         ELSE DATEADD(millisecond, @P10 % 1000, DATEADD(second, @P10 / 1000, GETUTCDATE())) END,
    @P11);
