-- Upgrades a seed-003 NimbusSubscriptions created before heartbeats: existing subscriptions count
-- as seen now, so none is swept until it has had the idle period to heartbeat.
ALTER TABLE {schema}."NimbusSubscriptions"
ADD COLUMN IF NOT EXISTS "LastSeenAt" timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'utc');
