DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusSagas"
WHERE "Id" = $1 AND "Version" = $2