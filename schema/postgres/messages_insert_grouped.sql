-- Inserts one message of an ordered group into NimbusMessages (shared-table layout), visible
-- after its delay. A first send takes its place in its group when it becomes visible (the
-- later of its VisibleAfter and the insert's clock, in microseconds since 1970); a retry copy
-- keeps the place of the message it stands in for, and the rest of its group waits for it.
-- Parameters: 1 MessageId (uuid), 2 Destination (varchar), 3 Body (bytea, the envelope with headers), 4 time to be received in ms (bigint, NULL for none), 5 absolute ExpiresAt (timestamp, NULL for none; wins over 4), 6 delay in ms (bigint, NULL for none), 7 absolute VisibleAfter (timestamp, NULL for none; wins over 6), 8 GroupKey (varchar), 9 GroupPlace (bigint: the place a retry copy keeps, NULL for a first send)
-- The VALUES form (the visible time written out again), so that sends merge into one
-- multi-row insert.
INSERT INTO {schema}."NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace")
VALUES ($1, $2, $3,
    COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
    COALESCE($5::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $8,
    COALESCE($9::bigint,
        (extract(epoch FROM GREATEST(
            COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
            clock_timestamp() AT TIME ZONE 'utc')) * 1000000)::bigint))
