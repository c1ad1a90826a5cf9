-- Stores one body apart, in the transaction that writes its message's queue row; Expires is
-- the absolute expiry if given, else now plus the time to be received.
-- Parameters: 1 Id (uuid), 2 Queue (varchar), 3 Body (bytea, NULL when in an object store),
-- 4 Store (varchar, NULL when in this table), 5 Size in bytes (bigint), 6 time to be received
-- in ms (bigint, NULL for none), 7 absolute Expires (timestamp, NULL for none; wins over 6)
INSERT INTO {schema}."NimbusBodies" ("Id", "Queue", "Body", "Store", "Size", "Expires")
VALUES ($1, $2, $3, $4, $5,
    COALESCE($7::timestamp,
        CASE WHEN $6::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $6::bigint * interval '1 millisecond' END))
