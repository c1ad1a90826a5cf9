SELECT [Queue], [PausedAt], [PausedBy]
FROM [Zeb]]ra "x" 'y'].[NimbusPausedQueues]
ORDER BY [Queue];