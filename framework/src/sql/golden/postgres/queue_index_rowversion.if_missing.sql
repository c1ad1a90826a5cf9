-- Runs an index creation statement only when the index is missing.
-- Parameters: none
-- PostgreSQL index statements already say IF NOT EXISTS, so the statement runs as it is.
CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_RowVersion"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "RowVersion" ASC
)
