WITH due AS (
    SELECT "RowVersion" FROM "NimbusDelayedMessages"
    WHERE "Due" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY "Due", "RowVersion"
    LIMIT ?1)
DELETE FROM "NimbusDelayedMessages"
WHERE "RowVersion" IN (SELECT "RowVersion" FROM due)
RETURNING "Id", "Destination", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body"