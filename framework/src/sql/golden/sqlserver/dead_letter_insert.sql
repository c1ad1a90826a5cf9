INSERT INTO [Zeb]]ra "x" 'y'].[NimbusDeadLetters] ([MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt])
SELECT @P1, @P2, @P3, @P4, SYSUTCDATETIME()
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters] WITH (UPDLOCK, HOLDLOCK)
    WHERE [MessageId] = @P1);