UPDATE "NimbusLeases"
SET "LeasedUntil" = strftime('%Y-%m-%d %H:%M:%f', 'now', (?2 / 1000.0) || ' seconds')
WHERE "LeaseId" = ?1