DELETE FROM "NimbusDeduplication"
WHERE "Scope" = ?1 AND "Key" = ?2