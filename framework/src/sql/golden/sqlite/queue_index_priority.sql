CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Priority"
ON "it's [Wal]] ""rus"""
(
    "Priority" DESC,
    "RowVersion" ASC
);