DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDelayedMessages"
WHERE "Id" = $1