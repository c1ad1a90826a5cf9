DELETE FROM [Zeb]]ra "x" 'y'].[NimbusPausedQueues]
WHERE [Queue] = @P1;