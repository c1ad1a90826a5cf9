-- Takes a free slot of a limit in the receive's transaction: one whose ReadyAt has passed and
-- that no other transaction holds; it stays locked until this transaction ends and is taken
-- again only after the period. No row when every slot is held or taken (the limit is full).
-- The clock is the statement's, not the transaction's: a batch's later messages are counted
-- at their own time.
-- Parameters: 1 Scope (varchar), 2 slots (bigint), 3 period in ms (bigint: 0 for a limit of
-- handlers at once)
-- Returns: Slot
UPDATE {schema}."NimbusLimits"
SET "ReadyAt" = (statement_timestamp() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond'
WHERE ("Scope", "Slot") = (
    SELECT "Scope", "Slot" FROM {schema}."NimbusLimits"
    WHERE "Scope" = $1 AND "Slot" >= 0 AND "Slot" < $2::bigint
      AND "ReadyAt" <= (statement_timestamp() AT TIME ZONE 'utc')
    ORDER BY "ReadyAt"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING "Slot"
