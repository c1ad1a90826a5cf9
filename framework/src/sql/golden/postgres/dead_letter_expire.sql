DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
    WHERE "FailedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)