DELETE FROM "NimbusSagas"
WHERE "Id" = ?1 AND "Version" = ?2