-- Inserts one message of an ordered group, at a priority, into a queue table that keeps both.
-- Parameters: 1 Id (text), 2 CorrelationId (text), 3 ReplyToAddress (text), 4 time to be received in ms (integer, NULL for none), 5 Headers (text), 6 Body (blob), 7 absolute Expires (text 'YYYY-MM-DD HH:MM:SS.SSS' UTC, NULL for none; wins over 4), 8 GroupKey (text), 9 GroupPosition (integer: the place a retry copy keeps, NULL for a first send), 10 not before, in ms from now (integer, NULL: at once), 11 Priority (integer: higher is received first, 0 normal)
INSERT INTO {table} ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body",
    "GroupKey", "GroupPosition", "NotBefore", "Priority")
VALUES (?1, ?2, ?3, 1,
    COALESCE(?7,
        CASE WHEN ?4 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?4 / 1000.0) || ' seconds') END),
    ?5, ?6, ?8, ?9,
    CASE WHEN ?10 IS NULL THEN NULL
         ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?10 / 1000.0) || ' seconds') END,
    ?11)
