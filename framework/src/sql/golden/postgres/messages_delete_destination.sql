DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
WHERE "MessageId" IN (
    SELECT "MessageId" FROM "Zeb]ra ""x"" 'y'"."NimbusMessages"
    WHERE "Destination" = $1
    LIMIT $2)