-- Deletes a schedule its endpoint's code no longer declares: no instance fires it again.
-- Parameters: 1 Endpoint (nvarchar(255)), 2 Name (nvarchar(255))
DELETE FROM {schema}.[NimbusSchedules]
WHERE [Endpoint] = @P1 AND [Name] = @P2;
