UPDATE "Zeb]ra ""x"" 'y'"."NimbusInstances"
SET "LastSeenAt" = (now() AT TIME ZONE 'utc')
WHERE "RunId" = $1 AND "StoppedAt" IS NULL