-- Deletes a schedule its endpoint's code no longer declares: no instance fires it again.
-- Parameters: 1 Endpoint (varchar), 2 Name (varchar)
DELETE FROM {schema}."NimbusSchedules"
WHERE "Endpoint" = $1 AND "Name" = $2
