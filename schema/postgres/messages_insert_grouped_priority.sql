-- Inserts one message of an ordered group, at a priority, into NimbusMessages (shared-table
-- layout) when it keeps both; placed as messages_insert_grouped.sql places it.
-- Parameters: 1 MessageId (uuid), 2 Destination (varchar), 3 Body (bytea, the envelope with headers), 4 time to be received in ms (bigint, NULL for none), 5 absolute ExpiresAt (timestamp, NULL for none; wins over 4), 6 delay in ms (bigint, NULL for none), 7 absolute VisibleAfter (timestamp, NULL for none; wins over 6), 8 GroupKey (varchar), 9 GroupPlace (bigint: the place a retry copy keeps, NULL for a first send), 10 Priority (bigint, stored as smallint: higher is received first, 0 normal)
-- The VALUES form (the visible time written out again), so that sends merge into one
-- multi-row insert.
INSERT INTO {schema}."NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace", "Priority")
VALUES ($1, $2, $3,
    COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
    COALESCE($5::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $8,
    COALESCE($9::bigint,
        (extract(epoch FROM GREATEST(
            COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
            clock_timestamp() AT TIME ZONE 'utc')) * 1000000)::bigint),
    CAST($10::bigint AS smallint))
