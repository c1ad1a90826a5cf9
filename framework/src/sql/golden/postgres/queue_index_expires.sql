-- Creates a queue table's Expires index (used to purge expired messages) where missing.
-- Parameters: none
CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Expires"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "Expires" ASC
)
INCLUDE
(
    "Id",
    "RowVersion"
);
