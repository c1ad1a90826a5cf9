DELETE FROM "NimbusLeases"
WHERE "LeaseId" = ?1