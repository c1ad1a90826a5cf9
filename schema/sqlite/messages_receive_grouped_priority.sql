-- Deletes and returns the first visible message of a destination in NimbusMessages when the
-- table keeps both ordered groups and priorities, as messages_receive_grouped.sql chooses one
-- (the first of its group), taking the highest Priority first: priorities choose which group
-- goes next, and a group's own messages keep their order whatever their priorities.
-- Parameters: 1 Destination (text)
-- Returns: MessageId (text), CorrelationId (NULL), ReplyToAddress (NULL), Headers (NULL; they travel in the Body's envelope), Body, Expired (0/1, by database time), ExpiresAt, GroupKey, the message's place in its group (integer)
WITH message AS (
    SELECT q."MessageId" FROM "NimbusMessages" AS q
    WHERE q."Destination" = ?1 AND q."VisibleAfter" <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      AND (q."GroupKey" IS NULL OR NOT EXISTS (
          SELECT 1 FROM "NimbusMessages" AS earlier
          WHERE earlier."Destination" = q."Destination" AND earlier."GroupKey" = q."GroupKey"
            AND (earlier."GroupPlace" < q."GroupPlace"
                 OR (earlier."GroupPlace" = q."GroupPlace" AND earlier."MessageId" < q."MessageId"))))
    ORDER BY q."Priority" DESC, q."VisibleAfter", q."MessageId"
    LIMIT 1)
DELETE FROM "NimbusMessages"
WHERE "MessageId" IN (SELECT "MessageId" FROM message)
RETURNING "MessageId", NULL, NULL, NULL, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN 0
         WHEN "ExpiresAt" > strftime('%Y-%m-%d %H:%M:%f', 'now') THEN 0
         ELSE 1 END AS "Expired",
    "ExpiresAt", "GroupKey", "GroupPlace"
