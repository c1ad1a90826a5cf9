DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "MessageId" = $1 AND "VisibleAfter" > (now() AT TIME ZONE 'utc')