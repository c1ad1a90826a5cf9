DECLARE @slot TABLE ([Slot] int NOT NULL);
UPDATE [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (ROWLOCK, READPAST)
SET [ReadyAt] = DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
OUTPUT inserted.[Slot] INTO @slot
WHERE [Scope] = @P1 AND [Slot] = (
    SELECT TOP (1) [Slot]
    FROM [Zeb]]ra "x" 'y'].[NimbusLimits] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Scope] = @P1 AND [Slot] >= 0 AND [Slot] < @P2 AND [ReadyAt] <= SYSUTCDATETIME()
    ORDER BY [ReadyAt]);
SELECT [Slot] FROM @slot;