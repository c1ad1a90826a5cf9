ALTER TABLE "NimbusSubscriptions"
ADD COLUMN "LastSeenAt" TEXT NOT NULL DEFAULT '1970-01-01 00:00:00.000';
UPDATE "NimbusSubscriptions" SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now');