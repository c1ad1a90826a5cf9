CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_GroupPosition"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    "GroupPosition" ASC,
    "GroupKey" ASC
);