-- Counts the keys held within their window, per scope, with the soonest end of a window.
-- Parameters: none
-- Returns: Scope, Keys (integer), SoonestExpiry
SELECT "Scope", COUNT(*), MIN("ExpiresAt")
FROM "NimbusDeduplication"
WHERE "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now')
GROUP BY "Scope"
ORDER BY "Scope"
