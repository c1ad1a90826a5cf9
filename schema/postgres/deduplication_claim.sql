-- Claims a key in a scope for a window, in the transaction of the send or receive it guards:
-- 1 row when the key was not seen within its window (new, or its last claim expired), 0 when
-- it was (a duplicate). A claim racing another of the same key waits for that transaction.
-- Parameters: 1 Scope (varchar), 2 Key (varchar), 3 window in ms (bigint)
INSERT INTO {schema}."NimbusDeduplication" AS seen ("Scope", "Key", "ExpiresAt")
VALUES ($1, $2, (now() AT TIME ZONE 'utc') + $3::bigint * interval '1 millisecond')
ON CONFLICT ("Scope", "Key") DO UPDATE SET "ExpiresAt" = EXCLUDED."ExpiresAt"
WHERE seen."ExpiresAt" <= EXCLUDED."ExpiresAt" - $3::bigint * interval '1 millisecond'
