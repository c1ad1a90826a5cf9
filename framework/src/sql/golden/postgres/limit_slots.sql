INSERT INTO "Zeb]ra ""x"" 'y'"."NimbusLimits" ("Scope", "Slot", "ReadyAt")
SELECT $1::varchar, slot, (clock_timestamp() AT TIME ZONE 'utc') - interval '1 second'
FROM generate_series(-1, $2::bigint - 1) AS slot
WHERE NOT EXISTS (
    SELECT 1 FROM "Zeb]ra ""x"" 'y'"."NimbusLimits" AS have
    WHERE have."Scope" = $1::varchar AND have."Slot" = slot)
ON CONFLICT ("Scope", "Slot") DO NOTHING