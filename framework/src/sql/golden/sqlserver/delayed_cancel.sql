DELETE FROM [Zeb]]ra "x" 'y'].[NimbusDelayedMessages] WITH (ROWLOCK)
WHERE [Id] = @P1;