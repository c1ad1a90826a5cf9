WITH due AS (
    SELECT "RowVersion" FROM "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
    WHERE "Due" <= (now() AT TIME ZONE 'utc')
    ORDER BY "Due", "RowVersion"
    LIMIT $1
    FOR UPDATE SKIP LOCKED)
DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages" AS delayed
USING due
WHERE delayed."RowVersion" = due."RowVersion"
RETURNING delayed."Id"::text, delayed."Destination", delayed."CorrelationId", delayed."ReplyToAddress",
    delayed."Expires", delayed."Headers", delayed."Body"