CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_RowVersion"
ON "it's [Wal]] ""rus"""
(
    "RowVersion" ASC
);