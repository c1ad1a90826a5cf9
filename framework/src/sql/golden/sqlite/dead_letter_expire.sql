DELETE FROM "NimbusDeadLetters"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "NimbusDeadLetters"
    WHERE "FailedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', (-?1) || ' seconds')
    LIMIT ?2)