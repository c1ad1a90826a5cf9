DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM "Zeb]ra ""x"" 'y'"."NimbusBodies"
    WHERE "DeadLetteredAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'
    LIMIT $2
    FOR UPDATE SKIP LOCKED)