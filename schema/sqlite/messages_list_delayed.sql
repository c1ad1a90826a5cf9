-- Lists the delayed messages of the shared-table layout (not yet visible), soonest first.
-- Parameters: 1 max rows (integer)
-- Returns: MessageId (text), Destination, VisibleAfter, Body (the envelope with headers)
SELECT "MessageId", "Destination", "VisibleAfter", "Body"
FROM "NimbusMessages"
WHERE "VisibleAfter" > strftime('%Y-%m-%d %H:%M:%f', 'now')
ORDER BY "VisibleAfter", "MessageId"
LIMIT ?1
