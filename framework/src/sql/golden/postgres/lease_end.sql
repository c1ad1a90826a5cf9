DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusLeases"
WHERE "LeaseId" = $1