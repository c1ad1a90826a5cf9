DELETE FROM "NimbusSchedules"
WHERE "Endpoint" = ?1 AND "Name" = ?2