ALTER TABLE "Zeb]ra ""x"" 'y'"."it's [Wal]] ""rus"""
    ADD COLUMN IF NOT EXISTS "Priority" smallint NOT NULL DEFAULT 0;