DELETE FROM [Zeb]]ra "x" 'y'].[NimbusSagas]
WHERE [Id] = @P1 AND [Version] = @P2;