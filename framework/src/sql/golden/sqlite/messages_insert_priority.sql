INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt", "Priority")
VALUES (?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8)