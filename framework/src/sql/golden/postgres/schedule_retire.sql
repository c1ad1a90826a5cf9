DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusSchedules"
WHERE "Endpoint" = $1 AND "Name" = $2