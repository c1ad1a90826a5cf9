DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDeadLetters]
OUTPUT deleted.[OriginalDestination], deleted.[Body]
WHERE [MessageId] = @P1;