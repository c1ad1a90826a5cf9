UPDATE "Zeb]ra ""x"" 'y'"."NimbusSagas"
SET "State" = $3, "Version" = "Version" + 1, "UpdatedAt" = (now() AT TIME ZONE 'utc'),
    "CompletedAt" = (now() AT TIME ZONE 'utc')
WHERE "Id" = $1 AND "Version" = $2