DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusInstances"
WHERE "LastSeenAt" < (now() AT TIME ZONE 'utc') - $1::bigint * interval '1 second'