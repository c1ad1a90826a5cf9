ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusMessages"
    ADD COLUMN IF NOT EXISTS "Priority" smallint NOT NULL DEFAULT 0;