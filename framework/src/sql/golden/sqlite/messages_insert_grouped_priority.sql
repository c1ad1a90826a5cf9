INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace", "Priority")
SELECT ?1, ?2, ?3, v."Visible",
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8,
    COALESCE(?9,
        CAST(ROUND((max(julianday(v."Visible"), julianday('now')) - 2440587.5) * 86400000.0) AS INTEGER) * 1000),
    ?10
FROM (SELECT COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')) AS "Visible") AS v