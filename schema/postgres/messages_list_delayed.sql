-- Lists the delayed messages of the shared-table layout (not yet visible), soonest first.
-- Parameters: 1 max rows (bigint)
-- Returns: MessageId (text), Destination, VisibleAfter, Body (the envelope with headers)
SELECT "MessageId"::text AS "MessageId", "Destination", "VisibleAfter", "Body"
FROM {schema}."NimbusMessages"
WHERE "VisibleAfter" > (now() AT TIME ZONE 'utc')
ORDER BY "VisibleAfter", "MessageId"
LIMIT $1
