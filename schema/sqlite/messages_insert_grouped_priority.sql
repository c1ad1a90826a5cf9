-- Inserts one message of an ordered group, at a priority, into NimbusMessages (shared-table
-- layout) when it keeps both; placed as messages_insert_grouped.sql places it.
-- Parameters: 1 MessageId (text), 2 Destination (text), 3 Body (blob, the envelope with headers), 4 time to be received in ms (integer, NULL for none), 5 absolute ExpiresAt (text UTC, NULL for none; wins over 4), 6 delay in ms (integer, NULL for none), 7 absolute VisibleAfter (text UTC, NULL for none; wins over 6), 8 GroupKey (text), 9 GroupPlace (integer: the place a retry copy keeps, NULL for a first send), 10 Priority (integer: higher is received first, 0 normal)
-- The VALUES form (the visible time written out again), so that sends merge into one
-- multi-row insert.
INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace", "Priority")
VALUES (?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8,
    COALESCE(?9,
        CAST(ROUND((max(julianday(COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds'))), julianday('now')) - 2440587.5) * 86400000.0) AS INTEGER) * 1000),
    ?10)
