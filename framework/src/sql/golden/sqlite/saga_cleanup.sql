DELETE FROM "NimbusSagas"
WHERE "Id" IN (
    SELECT "Id" FROM "NimbusSagas"
    WHERE "CompletedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)