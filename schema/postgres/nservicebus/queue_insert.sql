-- Inserts one message into a queue table; Expires is the absolute expiry if given, else now plus
-- the time to be received (NServiceBus's SendText writes the same columns, Seq from its default).
-- Parameters: 1 Id (uuid), 2 time to be received in ms (bigint, NULL for none), 3 Headers (text), 4 Body (bytea), 5 absolute Expires (timestamp, NULL for none; wins over 2)
INSERT INTO {table} (Id, Expires, Headers, Body)
VALUES ($1,
    COALESCE($5::timestamp,
        CASE WHEN $2::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $2::bigint * interval '1 millisecond' END),
    $3, $4)
