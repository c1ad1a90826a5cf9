DELETE FROM "NimbusInstances"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')