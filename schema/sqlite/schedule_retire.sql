-- Deletes a schedule its endpoint's code no longer declares: no instance fires it again.
-- Parameters: 1 Endpoint (text), 2 Name (text)
DELETE FROM "NimbusSchedules"
WHERE "Endpoint" = ?1 AND "Name" = ?2
