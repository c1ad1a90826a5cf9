CREATE UNIQUE INDEX IF NOT EXISTS "it's [Wal]] ""rus""_seq_key"
ON "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
(
    Seq ASC
)