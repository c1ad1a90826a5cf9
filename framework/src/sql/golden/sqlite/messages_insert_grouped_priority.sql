INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace", "Priority")
VALUES (?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8,
    COALESCE(?9,
        CAST(ROUND((max(julianday(COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds'))), julianday('now')) - 2440587.5) * 86400000.0) AS INTEGER) * 1000),
    ?10)