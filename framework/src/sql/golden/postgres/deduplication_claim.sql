INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusDeduplication" AS seen ("Scope", "Key", "ExpiresAt")
VALUES ($1, $2, (now() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond')
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = EXCLUDED."ExpiresAt"
WHERE seen."ExpiresAt" <= EXCLUDED."ExpiresAt" - $3::bigint * interval '1 millisecond'