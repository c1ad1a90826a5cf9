DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
WHERE "Id" IN (
    SELECT "Id" FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
    WHERE "CompletedAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)