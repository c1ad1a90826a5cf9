INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES ($1, $2,
    COALESCE($10::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($9::bigint, 0) * interval '1 millisecond'),
    $3, $4,
    COALESCE($8::timestamp,
        CASE WHEN $5::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $5::bigint * interval '1 millisecond' END),
    $6, $7)