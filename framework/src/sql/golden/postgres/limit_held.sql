UPDATE "Zeb]ra ""x"" 'y'"."NimbusLimits"
SET "Held" = "Held" + 1, "ReadyAt" = (statement_timestamp() AT TIME ZONE 'utc')
WHERE "Scope" = $1 AND "Slot" = -1