-- Inserts one message into a queue table that keeps priorities, at its priority.
-- Parameters: 1 Id (text), 2 CorrelationId (text), 3 ReplyToAddress (text), 4 time to be received in ms (integer, NULL for none), 5 Headers (text), 6 Body (blob), 7 absolute Expires (text 'YYYY-MM-DD HH:MM:SS.SSS' UTC, NULL for none; wins over 4), 8 Priority (integer: higher is received first, 0 normal)
INSERT INTO {table} ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body", "Priority")
VALUES (?1, ?2, ?3, 1,
    COALESCE(?7,
        CASE WHEN ?4 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?5, ?6, ?8)
