DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
    WHERE "Destination" = $1 AND "ExpiresAt" < (now() AT TIME ZONE 'utc')
    LIMIT $2
    FOR UPDATE SKIP LOCKED)