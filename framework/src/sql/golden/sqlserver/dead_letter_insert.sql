-- Inserts a dead letter unless one with the same MessageId exists (then it affects no row).
-- Parameters: 1 MessageId (uniqueidentifier), 2 OriginalDestination (nvarchar(255)), 3 Body (varbinary(max)), 4 DeliveryAttempts (int)
INSERT INTO [Zeb]]ra "x" 'y'].[NimbusDeadLetters] ([MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt])
SELECT @P1, @P2, @P3, @P4, SYSUTCDATETIME()
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters] WITH (UPDLOCK, HOLDLOCK)
    WHERE [MessageId] = @P1);
