-- Takes a free slot of a limit in the receive's transaction: one whose ReadyAt has passed and
-- that no other transaction holds; it stays locked until this transaction ends and is taken
-- again only after the period. No row when every slot is held or taken (the limit is full).
-- The slot is the TOP (1) of a subquery WITH (UPDLOCK, READPAST, ROWLOCK), as a receive takes
-- its row; OUTPUT copies the plain column INTO a table variable.
-- Parameters: 1 Scope (nvarchar(400)), 2 slots (bigint), 3 period in ms (bigint: 0 for a limit
-- of handlers at once)
-- Returns: Slot
DECLARE @slot TABLE ([Slot] int NOT NULL);
UPDATE {schema}.[NimbusLimits] WITH (ROWLOCK, READPAST)
SET [ReadyAt] = DATEADD(millisecond, @P3 % 1000, DATEADD(second, @P3 / 1000, SYSUTCDATETIME()))
OUTPUT inserted.[Slot] INTO @slot
WHERE [Scope] = @P1 AND [Slot] = (
    SELECT TOP (1) [Slot]
    FROM {schema}.[NimbusLimits] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Scope] = @P1 AND [Slot] >= 0 AND [Slot] < @P2 AND [ReadyAt] <= SYSUTCDATETIME()
    ORDER BY [ReadyAt]);
SELECT [Slot] FROM @slot;
