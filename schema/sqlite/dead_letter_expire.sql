-- Deletes at most a batch of dead letters that failed longer ago than the retention period
-- (database time).
-- Parameters: 1 the retention period in seconds (integer), 2 batch size (integer)
DELETE FROM "NimbusDeadLetters"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusDeadLetters"
    WHERE "FailedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)
