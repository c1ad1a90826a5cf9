DELETE FROM "Zeb]ra ""x"" 'y'"."NimbusDeduplication"
WHERE "Scope" = $1 AND "Key" = $2