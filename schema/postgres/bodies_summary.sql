-- What NimbusBodies holds, by queue: bodies, their bytes, how many are dead letters', how many
-- are in an object store, and the oldest's time.
-- Returns: Queue, bodies, bytes, dead letters' bodies, bodies in an object store, oldest StoredAt
-- Parameters: none
SELECT "Queue", count(*), COALESCE(sum("Size"), 0)::bigint,
       count("DeadLetteredAt"), count("Store"), min("StoredAt")
FROM {schema}."NimbusBodies"
GROUP BY "Queue"
ORDER BY "Queue"
