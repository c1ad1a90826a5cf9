DELETE FROM [Zeb]]ra "x" 'y'].[NimbusSchedules]
WHERE [Endpoint] = @P1 AND [Name] = @P2;