-- Inserts a delayed message into NimbusDelayedMessages, due after its delay or at its due time.
-- Parameters: 1 Id (text), 2 Destination (text), 3 CorrelationId (text), 4 ReplyToAddress (text), 5 time to be received in ms (integer, NULL for none), 6 Headers (text), 7 Body (blob), 8 absolute Expires (text UTC, NULL for none; wins over 5), 9 delay in ms (integer, NULL for none), 10 absolute due time (text UTC, NULL for none; wins over 9)
INSERT INTO "NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES (?1, ?2,
    COALESCE(?10, strftime('%Y-%m-%d %H:%M:%f', 'now', (COALESCE(?9, 0) / 1000.0) || ' seconds')),
    ?3, ?4,
    COALESCE(?8,
        CASE WHEN ?5 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', (?5 / 1000.0) || ' seconds') END),
    ?6, ?7)
