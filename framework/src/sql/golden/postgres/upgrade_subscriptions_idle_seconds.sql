ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
ADD COLUMN IF NOT EXISTS "IdleSeconds" bigint NULL;