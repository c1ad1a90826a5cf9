UPDATE "NimbusInstances"
SET "StoppedAt" = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "RunId" = ?1