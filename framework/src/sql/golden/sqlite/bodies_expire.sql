DELETE FROM "NimbusBodies"
WHERE "Id" IN (
    SELECT "Id" FROM "NimbusBodies"
    WHERE "Expires" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)