-- Adds LastSeenAt to a NimbusSubscriptions created before heartbeats (seed 003's upgrade).
-- Parameters: none
-- SQLite cannot add a column whose default is the current time, so existing rows are stamped by
-- the UPDATE (they count as seen now).
ALTER TABLE "NimbusSubscriptions"
ADD COLUMN "LastSeenAt" TEXT NOT NULL DEFAULT '1970-01-01 00:00:00.000';
UPDATE "NimbusSubscriptions" SET "LastSeenAt" = strftime('%Y-%m-%d %H:%M:%f', 'now');
