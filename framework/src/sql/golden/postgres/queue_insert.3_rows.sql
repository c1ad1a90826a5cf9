INSERT INTO "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body")
VALUES
($1, $2, $3, TRUE,
    COALESCE($7::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $5, $6),
($8, $9, $10, TRUE,
    COALESCE($14::timestamp,
        CASE WHEN $11::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $11::bigint * interval '1 millisecond' END),
    $12, $13),
($15, $16, $17, TRUE,
    COALESCE($21::timestamp,
        CASE WHEN $18::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $18::bigint * interval '1 millisecond' END),
    $19, $20)