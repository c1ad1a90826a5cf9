-- Pauses a queue; affects no row when it is paused already (the first pause's time and author
-- stay).
-- Parameters: 1 Queue (nvarchar(255)), 2 PausedBy (nvarchar(255): who paused it, for operators)
INSERT INTO {schema}.[NimbusPausedQueues] ([Queue], [PausedAt], [PausedBy])
SELECT @P1, SYSUTCDATETIME(), @P2
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.[NimbusPausedQueues] WITH (UPDLOCK, HOLDLOCK)
    WHERE [Queue] = @P1);
