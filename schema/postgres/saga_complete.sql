-- Marks a saga instance completed, with its last state, if it is still at the version it was
-- read at: it stays (for messages that arrive late to find it completed) until
-- saga_cleanup.sql deletes it; affects no row when another change came first.
-- Parameters: 1 Id (uuid), 2 Version read (bigint), 3 State (text: JSON)
UPDATE {schema}."NimbusSagas"
SET "State" = $3, "Version" = "Version" + 1, "UpdatedAt" = (now() AT TIME ZONE 'utc'),
    "CompletedAt" = (now() AT TIME ZONE 'utc')
WHERE "Id" = $1 AND "Version" = $2
