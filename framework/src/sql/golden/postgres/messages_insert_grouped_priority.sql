INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
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