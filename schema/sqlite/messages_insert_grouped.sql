-- Inserts one message of an ordered group into NimbusMessages (shared-table layout), visible
-- after its delay. A first send takes its place in its group when it becomes visible (the later
-- of its VisibleAfter and now, in microseconds since 1970; SQLite's clock counts milliseconds); a
-- retry copy keeps the place of the message it stands in for, and the rest of its group waits
-- for it.
-- Parameters: 1 MessageId (text), 2 Destination (text), 3 Body (blob, the envelope with headers), 4 time to be received in ms (integer, NULL for none), 5 absolute ExpiresAt (text UTC, NULL for none; wins over 4), 6 delay in ms (integer, NULL for none), 7 absolute VisibleAfter (text UTC, NULL for none; wins over 6), 8 GroupKey (text), 9 GroupPlace (integer: the place a retry copy keeps, NULL for a first send)
-- The VALUES form (the visible time written out again), so that sends merge into one
-- multi-row insert.
INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt",
    "GroupKey", "GroupPlace")
VALUES (?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8,
    COALESCE(?9,
        CAST(ROUND((max(julianday(COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds'))), julianday('now')) - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
