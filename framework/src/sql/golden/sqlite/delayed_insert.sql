INSERT INTO "NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES (?1, ?2,
    COALESCE(?10, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?9, 0) / 1000.0) || ' seconds')),
    ?3, ?4,
    COALESCE(?8,
        CASE WHEN ?5 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?5 / 1000.0) || ' seconds') END),
    ?6, ?7)