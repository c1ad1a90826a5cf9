UPDATE "NimbusInstances"
SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "RunId" = ?1 AND "StoppedAt" IS NULL