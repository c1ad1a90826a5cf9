-- Counts a message the limit held back, in the transaction that puts it back to wait.
-- Parameters: 1 Scope (varchar)
UPDATE {schema}."NimbusLimits"
SET "Held" = "Held" + 1, "ReadyAt" = (statement_timestamp() AT TIME ZONE 'utc')
WHERE "Scope" = $1 AND "Slot" = -1
