ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusSubscriptions"
ADD COLUMN IF NOT EXISTS "LastSeenAt" timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'utc');