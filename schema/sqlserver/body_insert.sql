-- Stores one body apart, in the transaction that writes its message's queue row; Expires is
-- the absolute expiry if given, else now plus the time to be received.
-- Parameters: 1 Id (uniqueidentifier), 2 Queue (nvarchar(255)), 3 Body (varbinary(max), NULL
-- when in an object store), 4 Store (nvarchar(255), NULL when in this table), 5 Size in bytes
-- (bigint), 6 time to be received in ms (bigint, NULL for none), 7 absolute Expires (datetime2,
-- NULL for none; wins over 6)
INSERT INTO {schema}.[NimbusBodies] ([Id], [Queue], [Body], [Store], [Size], [Expires])
VALUES (@P1, @P2, @P3, @P4, @P5,
    COALESCE(@P7,
        CASE WHEN @P6 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P6 % 1000, DATEADD(second, @P6 / 1000, SYSUTCDATETIME())) END));
