DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDeduplication" AS seen
WHERE seen."Scope" = $1
  AND seen."Key" IN (
      SELECT listed.value FROM json_array_elements_text(CAST($2::text AS json)) AS listed)
  AND seen."ExpiresAt" <= (now() AT TIME ZONE 'utc')