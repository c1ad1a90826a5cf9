-- Inserts one message into a queue table that keeps priorities, at its priority.
-- Parameters: 1 Id (uuid), 2 CorrelationId (varchar), 3 ReplyToAddress (varchar), 4 time to be received in ms (bigint, NULL for none), 5 Headers (text), 6 Body (bytea), 7 absolute Expires (timestamp, NULL for none; wins over 4), 8 Priority (bigint, stored as smallint: higher is received first, 0 normal)
INSERT INTO {table} ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body", "Priority")
VALUES ($1, $2, $3, TRUE,
    COALESCE($7::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $5, $6, CAST($8::bigint AS smallint))
