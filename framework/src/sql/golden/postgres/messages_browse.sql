SELECT "MessageId"::text AS "MessageId", "Body", "VisibleAfter", "ExpiresAt"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "Destination" = $1
ORDER BY "VisibleAfter", "MessageId"
LIMIT $2