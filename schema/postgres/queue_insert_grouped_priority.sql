-- Inserts one message of an ordered group, at a priority, into a queue table that keeps both.
-- Parameters: 1 Id (uuid), 2 CorrelationId (varchar), 3 ReplyToAddress (varchar), 4 time to be received in ms (bigint, NULL for none), 5 Headers (text), 6 Body (bytea), 7 absolute Expires (timestamp, NULL for none; wins over 4), 8 GroupKey (varchar), 9 GroupPosition (bigint: the place a retry copy keeps, NULL for a first send), 10 not before, in ms from now (bigint, NULL: at once), 11 Priority (bigint, stored as smallint: higher is received first, 0 normal)
INSERT INTO {table} ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body",
    "GroupKey", "GroupPosition", "NotBefore", "Priority")
VALUES ($1, $2, $3, TRUE,
    COALESCE($7::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $5, $6, $8, $9::bigint,
    CASE WHEN $10::bigint IS NULL THEN NULL
         ELSE (now() AT TIME ZONE 'utc') + $10::bigint * interval '1 millisecond' END,
    CAST($11::bigint AS smallint))
