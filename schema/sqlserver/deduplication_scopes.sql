-- Counts the keys held within their window, per scope, with the soonest end of a window.
-- Parameters: none
-- Returns: Scope, Keys (bigint), SoonestExpiry
SELECT [Scope], CAST(COUNT(*) AS bigint), MIN([ExpiresAt])
FROM {schema}.[NimbusDeduplication]
WHERE [ExpiresAt] > SYSUTCDATETIME()
GROUP BY [Scope]
ORDER BY [Scope];
