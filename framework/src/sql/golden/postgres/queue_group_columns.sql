ALTER TABLE "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    ADD COLUMN IF NOT EXISTS "GroupKey"      varchar(255) NULL,
    ADD COLUMN IF NOT EXISTS "GroupPosition" bigint       NULL,
    ADD COLUMN IF NOT EXISTS "NotBefore"     timestamp    NULL;