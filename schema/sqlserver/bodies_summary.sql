-- What NimbusBodies holds, by queue: bodies, their bytes, how many are dead letters', how many
-- are in an object store, and the oldest's time.
-- Returns: Queue, bodies, bytes, dead letters' bodies, bodies in an object store, oldest StoredAt
-- Parameters: none
SELECT [Queue], COUNT_BIG(*), COALESCE(SUM([Size]), 0),
       COUNT_BIG([DeadLetteredAt]), COUNT_BIG([Store]), MIN([StoredAt])
FROM {schema}.[NimbusBodies]
GROUP BY [Queue]
ORDER BY [Queue];
