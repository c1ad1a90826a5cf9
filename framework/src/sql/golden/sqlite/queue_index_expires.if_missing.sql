CREATE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_Index_Expires"
ON "it's [Wal]] ""rus"""
(
    "Expires" ASC,
    "Id",
    "RowVersion"
)