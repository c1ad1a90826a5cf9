DELETE FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
WHERE Id IN (
    SELECT Id FROM "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    WHERE Expires < (now() AT TIME ZONE 'utc')
    LIMIT $1
    FOR UPDATE SKIP LOCKED)