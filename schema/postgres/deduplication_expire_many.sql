-- Deletes those of several keys of one scope whose window ended, so that
-- deduplication_claim_many.sql, run next in the same transaction, claims them again.
-- Parameters: 1 Scope (varchar), 2 the keys (text: a JSON array of strings)
DELETE FROM {schema}."NimbusDeduplication" AS seen
WHERE seen."Scope" = $1
  AND seen."Key" IN (
      SELECT listed.value FROM json_array_elements_text(CAST($2::text AS json)) AS listed)
  AND seen."ExpiresAt" <= (now() AT TIME ZONE 'utc')
