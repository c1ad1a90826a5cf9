INSERT INTO "it's [Wal]] ""rus""" ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body")
VALUES
(?1, ?2, ?3, 1,
    COALESCE(?7,
        CASE WHEN ?4 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?5, ?6),
(?8, ?9, ?10, 1,
    COALESCE(?14,
        CASE WHEN ?11 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?11 / 1000.0) || ' seconds') END),
    ?12, ?13),
(?15, ?16, ?17, 1,
    COALESCE(?21,
        CASE WHEN ?18 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?18 / 1000.0) || ' seconds') END),
    ?19, ?20)