INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusDeduplication" AS seen ("Scope", "Key", "ExpiresAt")
SELECT CAST($1 AS text), listed.value, (now() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond'
FROM json_array_elements_text(CAST($2::text AS json)) AS listed
ON CONFLICT ("Scope", "Key") DO NOTHING
RETURNING seen."Key"