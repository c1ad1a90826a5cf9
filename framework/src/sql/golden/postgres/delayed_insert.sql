-- Inserts a delayed message into NimbusDelayedMessages, due after its delay or at its due time.
-- Parameters: 1 Id (uuid), 2 Destination (varchar), 3 CorrelationId (varchar), 4 ReplyToAddress (varchar), 5 time to be received in ms (bigint, NULL for none), 6 Headers (text), 7 Body (bytea), 8 absolute Expires (timestamp, NULL for none; wins over 5), 9 delay in ms (bigint, NULL for none), 10 absolute due time (timestamp, NULL for none; wins over 9)
INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES ($1, $2,
    COALESCE($10::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($9::bigint, 0) * interval '1 millisecond'),
    $3, $4,
    COALESCE($8::timestamp,
        CASE WHEN $5::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $5::bigint * interval '1 millisecond' END),
    $6, $7)
