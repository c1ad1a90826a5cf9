-- Stores one body apart, in the transaction that writes its message's queue row; Expires is
-- the absolute expiry if given, else now plus the time to be received.
-- Parameters: 1 Id (text), 2 Queue (text), 3 Body (blob, NULL when in an object store),
-- 4 Store (text, NULL when in this table), 5 Size in bytes (integer), 6 time to be received in
-- ms (integer, NULL for none), 7 absolute Expires (text 'YYYY-MM-DD HH:MM:SS.SSS' UTC, NULL for
-- none; wins over 6)
INSERT INTO "NimbusBodies" ("Id", "Queue", "Body", "Store", "Size", "Expires")
VALUES (?1, ?2, ?3, ?4, ?5,
    COALESCE(?7,
        CASE WHEN ?6 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?6 / 1000.0) || ' seconds') END))
