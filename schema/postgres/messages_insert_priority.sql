-- Inserts one message of a destination into NimbusMessages (shared-table layout) at its
-- priority, visible after its delay.
-- Parameters: 1 MessageId (uuid), 2 Destination (varchar), 3 Body (bytea, the envelope with headers), 4 time to be received in ms (bigint, NULL for none), 5 absolute ExpiresAt (timestamp, NULL for none; wins over 4), 6 delay in ms (bigint, NULL for none), 7 absolute VisibleAfter (timestamp, NULL for none; wins over 6), 8 Priority (bigint, stored as smallint: higher is received first, 0 normal)
INSERT INTO {schema}."NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt", "Priority")
VALUES ($1, $2, $3,
    COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
    COALESCE($5::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    CAST($8::bigint AS smallint))
