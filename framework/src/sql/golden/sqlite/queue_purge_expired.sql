DELETE FROM "it's [Wal]] ""rus"""
WHERE "RowVersion" IN (
    SELECT "RowVersion" FROM "it's [Wal]] ""rus"""
    WHERE "Expires" < strftime('%Y-%m-%d %H:%M:%f', 'now')
    LIMIT ?1)