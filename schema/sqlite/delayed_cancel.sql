-- Deletes a delayed message that is still waiting in NimbusDelayedMessages: 1 row when it was pending, 0 when it was delivered (moved to its queue) or never existed. Writers take turns on the file, so exactly one of the two wins.
-- Parameters: 1 Id (text)
DELETE FROM "NimbusDelayedMessages"
WHERE "Id" = ?1
