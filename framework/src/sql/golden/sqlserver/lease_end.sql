DELETE FROM [Zeb]]ra "x" 'y'].[NimbusLeases] WITH (ROWLOCK)
WHERE [LeaseId] = @P1;