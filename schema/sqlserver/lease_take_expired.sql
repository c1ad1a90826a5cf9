-- Deletes and returns the longest-expired lease of a queue (by database time), skipping leases other transactions hold, in a transaction that stays open until its message is retried or dead-lettered.
-- Parameters: 1 Queue (nvarchar(255))
-- Returns: Id, CorrelationId, ReplyToAddress, Headers, Body, Expired (bit, by database time), Expires
-- The form of queue_receive.sql: the lease is the TOP (1) of a subquery WITH (UPDLOCK, READPAST,
-- ROWLOCK), so a lease being renewed or ended is skipped; one DELETE removes it and OUTPUT copies
-- it INTO a table variable, which the SELECT returns with Expired computed there.
DECLARE @lease TABLE (
    [Id]             nvarchar(255)    NULL,
    [CorrelationId]  nvarchar(max)    NULL,
    [ReplyToAddress] nvarchar(max)    NULL,
    [Headers]        nvarchar(max)    NULL,
    [Body]           varbinary(max)   NULL,
    [Expires]        datetime2        NULL
);
DELETE FROM {schema}.[NimbusLeases] WITH (ROWLOCK, READPAST)
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers],
    deleted.[Body], deleted.[Expires]
INTO @lease
WHERE [LeasedUntil] < SYSUTCDATETIME() AND [LeaseId] = (
    SELECT TOP (1) [LeaseId]
    FROM {schema}.[NimbusLeases] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Queue] = @P1 AND [LeasedUntil] < SYSUTCDATETIME()
    ORDER BY [LeasedUntil]);
SELECT [Id], [CorrelationId], [ReplyToAddress], [Headers], [Body],
    CAST(CASE WHEN [Expires] IS NULL THEN 0
              WHEN [Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    [Expires]
FROM @lease;
