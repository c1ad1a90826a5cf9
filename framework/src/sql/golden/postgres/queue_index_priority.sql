CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Priority"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "Priority" DESC,
    "RowVersion" ASC
);