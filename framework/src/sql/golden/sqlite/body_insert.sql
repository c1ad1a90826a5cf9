INSERT INTO "NimbusBodies" ("Id", "Queue", "Body", "Store", "Size", "Expires")
VALUES (?1, ?2, ?3, ?4, ?5,
    COALESCE(?7,
        CASE WHEN ?6 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?6 / 1000.0) || ' seconds') END))