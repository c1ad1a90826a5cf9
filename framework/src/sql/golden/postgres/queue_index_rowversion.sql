-- Creates a queue table's RowVersion index (the FIFO order of receive and peek) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_RowVersion"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "RowVersion" ASC
);
