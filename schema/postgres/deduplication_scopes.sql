-- Counts the keys held within their window, per scope, with the soonest end of a window.
-- Parameters: none
-- Returns: Scope, Keys (bigint), SoonestExpiry
SELECT "Scope", COUNT(*), MIN("ExpiresAt")
FROM {schema}."NimbusDeduplication"
WHERE "ExpiresAt" > (now() AT TIME ZONE 'utc')
GROUP BY "Scope"
ORDER BY "Scope"
