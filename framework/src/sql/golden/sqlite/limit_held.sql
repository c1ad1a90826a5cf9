UPDATE "NimbusLimits"
SET "Held" = "Held" + 1, "ReadyAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Scope" = ?1 AND "Slot" = -1