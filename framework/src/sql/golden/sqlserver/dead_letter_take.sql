-- Deletes one dead letter and returns what is needed to replay it.
-- Parameters: 1 MessageId (uniqueidentifier)
-- Returns: OriginalDestination, Body
DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
OUTPUT deleted.[OriginalDestination], deleted.[Body]
WHERE [MessageId] = @P1;
