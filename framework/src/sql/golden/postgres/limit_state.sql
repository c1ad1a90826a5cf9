SELECT COUNT(*),
    CAST(EXTRACT(EPOCH FROM (MIN("ReadyAt") - (statement_timestamp() AT TIME ZONE 'utc'))) * 1000
         AS bigint)
FROM "Zeb]ra ""x"" 'y'"."NimbusLimits"
WHERE "Scope" = $1 AND "Slot" >= 0 AND "Slot" < $2::bigint