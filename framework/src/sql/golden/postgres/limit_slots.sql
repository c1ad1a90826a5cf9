INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT $1, slot, (clock_timestamp() AT TIME ZONE 'utc') - interval '1 second'
FROM generate_series(-1, $2::bigint - 1) AS slot
ON CONFLICT ("Scope", "Slot") DO NOTHING