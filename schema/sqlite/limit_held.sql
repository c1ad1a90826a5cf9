-- Counts a message the limit held back, in the transaction that puts it back to wait.
-- Parameters: 1 Scope (text)
UPDATE "NimbusLimits"
SET "Held" = "Held" + 1, "ReadyAt" = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE "Scope" = ?1 AND "Slot" = -1
