CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Group"
ON "it's [Wal]] ""rus"""
(
    "GroupKey" ASC,
    "RowVersion" ASC
)