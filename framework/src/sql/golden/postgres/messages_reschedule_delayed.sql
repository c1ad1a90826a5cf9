UPDATE "Zeb]ra ""x"" 'y'"."NimbusMessages"
SET "VisibleAfter" = COALESCE($3::timestamp, (now() AT TIME ZONE 'utc') + COALESCE($2::bigint, 0) * interval '1 millisecond')
WHERE "MessageId" = $1 AND "VisibleAfter" > (now() AT TIME ZONE 'utc')