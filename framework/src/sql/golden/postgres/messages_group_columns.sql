ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusMessages"
    ADD COLUMN IF NOT EXISTS "GroupKey"   varchar(255) NULL,
    ADD COLUMN IF NOT EXISTS "GroupPlace" bigint       NULL;