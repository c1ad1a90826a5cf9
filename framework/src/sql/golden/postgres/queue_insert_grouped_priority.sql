INSERT INTO "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus""" ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body",
    "GroupKey", "GroupPosition", "NotBefore", "Priority")
VALUES ($1, $2, $3, TRUE,
    COALESCE($7::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE (now() AT TIME ZONE 'utc') + $4::bigint * interval '1 millisecond' END),
    $5, $6, $8, $9::bigint,
    CASE WHEN $10::bigint IS NULL THEN NULL
         ELSE (now() AT TIME ZONE 'utc') + $10::bigint * interval '1 millisecond' END,
    CAST($11::bigint AS smallint))