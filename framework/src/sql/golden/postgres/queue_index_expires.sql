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