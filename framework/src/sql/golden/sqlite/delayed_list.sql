SELECT "Id", "Destination", "Due", "Headers"
FROM "NimbusDelayedMessages"
ORDER BY "Due", "RowVersion"
LIMIT ?1