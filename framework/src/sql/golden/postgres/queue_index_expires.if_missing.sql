-- Runs an index creation statement only when the index is missing.
-- Parameters: none
-- PostgreSQL index statements already say IF NOT EXISTS, so the statement runs as it is.
CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Expires"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "Expires" ASC
)
INCLUDE
(
    "Id",
    "RowVersion"
)
