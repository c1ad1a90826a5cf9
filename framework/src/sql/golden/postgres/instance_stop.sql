UPDATE "Zeb]ra ""x"" 'y'"."NimbusInstances"
SET "StoppedAt" = (now() AT TIME ZONE 'utc'), "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "RunId" = $1