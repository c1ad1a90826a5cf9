-- Waits on the server, looking every @P2 and at most @P1 times, until the queue table holds a message no other transaction holds, then estimates its depth as queue_peek.sql does: an idle queue's look for other processes' messages costs one round trip per @P1 looks, not one per look.
-- Parameters: 1 Looks (bigint), 2 Every (varchar(12): hh:mm:ss.fff, as WAITFOR DELAY takes it)
-- Returns: Estimate (bigint)
-- READPAST and READCOMMITTEDLOCK as in queue_peek.sql. Nothing is held between looks: each
-- EXISTS releases its shared locks when it ends, and WAITFOR DELAY holds none.
DECLARE @looks bigint = @P1;
DECLARE @every varchar(12) = @P2;
WHILE @looks > 0 AND NOT EXISTS (SELECT 1 FROM {table} WITH (READPAST, READCOMMITTEDLOCK))
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM {table} WITH (READPAST, READCOMMITTEDLOCK);
