-- Lists the delayed messages waiting in NimbusDelayedMessages, soonest due first.
-- Parameters: 1 max rows (integer)
-- Returns: Id (text), Destination, Due, Headers
SELECT "Id", "Destination", "Due", "Headers"
FROM "NimbusDelayedMessages"
ORDER BY "Due", "RowVersion"
LIMIT ?1
