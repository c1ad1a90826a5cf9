INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt")
VALUES
($1, $2, $3,
    COALESCE($7::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($6::bigint, 0) * interval '1 millisecond'),
    COALESCE($5::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END)),
($8, $9, $10,
    COALESCE($14::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($13::bigint, 0) * interval '1 millisecond'),
    COALESCE($12::timestamp,
        CASE WHEN $11::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $11::bigint * interval '1 millisecond' END)),
($15, $16, $17,
    COALESCE($21::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($20::bigint, 0) * interval '1 millisecond'),
    COALESCE($19::timestamp,
        CASE WHEN $18::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $18::bigint * interval '1 millisecond' END))