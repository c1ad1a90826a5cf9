-- Inserts one message of a destination into NimbusMessages (shared-table layout) at its
-- priority, visible after its delay.
-- Parameters: 1 MessageId (text), 2 Destination (text), 3 Body (blob, the envelope with headers), 4 time to be received in ms (integer, NULL for none), 5 absolute ExpiresAt (text UTC, NULL for none; wins over 4), 6 delay in ms (integer, NULL for none), 7 absolute VisibleAfter (text UTC, NULL for none; wins over 6), 8 Priority (integer: higher is received first, 0 normal)
INSERT INTO "NimbusMessages" ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt", "Priority")
VALUES (?1, ?2, ?3,
    COALESCE(?7, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?6, 0) / 1000.0) || ' seconds')),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?8)
