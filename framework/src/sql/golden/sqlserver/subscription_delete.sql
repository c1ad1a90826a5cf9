DELETE FROM [Zeb]]ra "x" 'y'].[NimbusSubscriptions]
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;