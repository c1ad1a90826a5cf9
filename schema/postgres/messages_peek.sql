-- Counts the visible messages of a destination in NimbusMessages that no other transaction holds, up to 1,000.
-- Parameters: 1 Destination (varchar)
-- Returns: Estimate (bigint)
-- The rows receives hold (this instance's and others') are skipped: counted, they would send idle
-- receivers after rows nobody can take. Testing a row for a lock takes one (FOR KEY SHARE, the
-- weakest, for the statement only), so the count stops at 1,000: more than a round of receives
-- uses, and a bound on the rows one peek touches.
SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM {schema}."NimbusMessages"
    WHERE "Destination" = $1 AND "VisibleAfter" <= (now() AT TIME ZONE 'utc')
    LIMIT 1000
    FOR KEY SHARE SKIP LOCKED) AS visible
