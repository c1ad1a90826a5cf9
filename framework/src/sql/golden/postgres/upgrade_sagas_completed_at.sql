ALTER TABLE "Zeb]ra ""x"" 'y'"."NimbusSagas"
ADD COLUMN IF NOT EXISTS "CompletedAt" timestamp NULL;