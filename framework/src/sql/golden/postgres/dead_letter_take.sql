DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDeadLetters"
WHERE "MessageId" = $1
RETURNING "OriginalDestination", "Body"