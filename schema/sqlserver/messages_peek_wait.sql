-- Waits on the server, looking every @P3 and at most @P2 times, until NimbusMessages holds a visible message of a destination that no other transaction holds, then counts as messages_peek.sql does: an idle queue's look for other processes' messages costs one round trip per @P2 looks, not one per look.
-- Parameters: 1 Destination (nvarchar(255)), 2 Looks (bigint), 3 Every (varchar(12): hh:mm:ss.fff, as WAITFOR DELAY takes it)
-- Returns: Estimate (bigint)
-- READPAST and READCOMMITTEDLOCK as in messages_peek.sql. Nothing is held between looks: each
-- EXISTS releases its shared locks when it ends, and WAITFOR DELAY holds none.
DECLARE @looks bigint = @P2;
DECLARE @every varchar(12) = @P3;
WHILE @looks > 0 AND NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME())
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM {schema}.[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];
