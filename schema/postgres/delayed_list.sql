-- Lists the delayed messages waiting in NimbusDelayedMessages, soonest due first.
-- Parameters: 1 max rows (bigint)
-- Returns: Id (text), Destination, Due, Headers
SELECT "Id"::text AS "Id", "Destination", "Due", "Headers"
FROM {schema}."NimbusDelayedMessages"
ORDER BY "Due", "RowVersion"
LIMIT $1
