-- Reads one dead letter without removing it; no row when there is none.
-- Parameters: 1 MessageId (uniqueidentifier)
-- Returns: MessageId (uniqueidentifier), OriginalDestination, Body, DeliveryAttempts, FailedAt
SELECT [MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt]
FROM {schema}.[NimbusDeadLetters]
WHERE [MessageId] = @P1;
