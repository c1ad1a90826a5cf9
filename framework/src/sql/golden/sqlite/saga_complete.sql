UPDATE "NimbusSagas"
SET "State" = ?3, "Version" = "Version" + 1,
    "UpdatedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    "CompletedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Id" = ?1 AND "Version" = ?2