-- One part of watch_wait.sql: names the queue, by its place {label} in the list of queues the process watches, when NimbusMessages holds a visible message for it that no other transaction holds.
-- Parameters: none of its own; {destination} is the parameter of watch_wait.sql that holds the queue's name (nvarchar(255))
-- Returns: Ready (int)
-- READPAST and READCOMMITTEDLOCK as in messages_peek.sql.
SELECT {label} AS [Ready]
WHERE EXISTS (
    SELECT 1 FROM {schema}.[NimbusMessages] WITH (READPAST, READCOMMITTEDLOCK)
    WHERE [Destination] = {destination} AND [VisibleAfter] <= SYSUTCDATETIME())
