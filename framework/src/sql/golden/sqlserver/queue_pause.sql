INSERT INTO [Zeb]]ra "x" 'y'].[NimbusPausedQueues] ([Queue], [PausedAt], [PausedBy])
SELECT @P1, SYSUTCDATETIME(), @P2
WHERE NOT EXISTS (
    SELECT 1 FROM [Zeb]]ra "x" 'y'].[NimbusPausedQueues] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Queue] = @P1);