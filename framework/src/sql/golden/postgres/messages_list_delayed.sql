SELECT "MessageId"::text AS "MessageId", "Destination", "VisibleAfter", "Body"
FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "VisibleAfter" > (now() AT TIME ZONE 'utc')
ORDER BY "VisibleAfter", "MessageId"
LIMIT $1