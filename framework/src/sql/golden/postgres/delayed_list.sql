SELECT "Id"::text AS "Id", "Destination", "Due", "Headers"
FROM "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
ORDER BY "Due", "RowVersion"
LIMIT $1