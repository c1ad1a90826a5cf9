SELECT [Queue], COUNT_BIG(*), COALESCE(SUM([Size]), 0),
       COUNT_BIG([DeadLetteredAt]), COUNT_BIG([Store]), MIN([StoredAt])
FROM [Zeb]]ra "x" 'y'].[NimbusBodies]
GROUP BY [Queue]
ORDER BY [Queue];