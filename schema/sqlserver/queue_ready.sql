-- One part of watch_wait.sql: names the queue, by its place {label} in the list of queues the process watches, when its table holds a message no other transaction holds.
-- Parameters: none of its own (it is run only inside watch_wait.sql)
-- Returns: Ready (int)
-- READPAST and READCOMMITTEDLOCK as in queue_peek.sql: rows other receivers hold are skipped,
-- and with READ_COMMITTED_SNAPSHOT on the read still takes (and at once releases) shared locks.
SELECT {label} AS [Ready]
WHERE EXISTS (SELECT 1 FROM {table} WITH (READPAST, READCOMMITTEDLOCK))
