UPDATE "Zeb]ra ""x"" 'y'"."NimbusLeases"
SET "LeasedUntil" = (now() AT TIME ZONE 'utc') + $2::bigint * interval '1 millisecond'
WHERE "LeaseId" = $1