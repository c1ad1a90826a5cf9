INSERT INTO "it's [Wal]] ""rus""" ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body",
    "GroupKey", "GroupPosition", "NotBefore", "Priority")
VALUES (?1, ?2, ?3, 1,
    COALESCE(?7,
        CASE WHEN ?4 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?5, ?6, ?8, ?9,
    CASE WHEN ?10 IS NULL THEN NULL
         ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?10 / 1000.0) || ' seconds') END,
    ?11)