CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_RowVersion"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "RowVersion" ASC
)