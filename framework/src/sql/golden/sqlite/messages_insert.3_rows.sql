INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt")
VALUES
(?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END)),
(?8, ?9, ?10,
    COALESCE(?14, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?13, 0) / 1000.0) || ' seconds')),
    COALESCE(?12, CASE WHEN ?11 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?11 / 1000.0) || ' seconds') END)),
(?15, ?16, ?17,
    COALESCE(?21, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?20, 0) / 1000.0) || ' seconds')),
    COALESCE(?19, CASE WHEN ?18 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?18 / 1000.0) || ' seconds') END))