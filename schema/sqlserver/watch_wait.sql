-- Waits on the server, looking every @P2 and at most @P1 times, until one of the queues the process watches holds a message no other transaction holds, then names those that do: one statement, on one connection, for every idle queue of the process on this database.
-- Parameters: 1 Looks (bigint), 2 Every (varchar(12): hh:mm:ss.fff, as WAITFOR DELAY takes it), then the queue names that the {ready} parts of the shared table compare Destination with (nvarchar(255)), @P3 onwards
-- Returns: Ready (int), one row per queue that holds a message: its place in the list
-- {ready} is the watched queues' queue_ready.sql and messages_ready.sql, each with its place as
-- {label}, joined by UNION ALL. A server without WAITFOR (Babelfish for PostgreSQL) runs {ready}
-- alone, once per look. Nothing is held between looks: each EXISTS releases its shared locks
-- when it ends, and WAITFOR DELAY holds none.
DECLARE @looks bigint = @P1;
DECLARE @every varchar(12) = @P2;
WHILE @looks > 0 AND NOT EXISTS ({ready})
BEGIN
    WAITFOR DELAY @every;
    SET @looks = @looks - 1;
END;
{ready};
