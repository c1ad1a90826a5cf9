SELECT COUNT_BIG(*) FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
WHERE [SubscriberQueue] = @P1;