UPDATE "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
SET "Due" = COALESCE($3::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($2::bigint, 0) * interval '1 millisecond')
WHERE "Id" = $1