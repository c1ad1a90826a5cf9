-- Lists the paused queues, with when and by whom each was paused.
-- Parameters: none
-- Returns: Queue, PausedAt, PausedBy
SELECT [Queue], [PausedAt], [PausedBy]
FROM {schema}.[NimbusPausedQueues]
ORDER BY [Queue];
