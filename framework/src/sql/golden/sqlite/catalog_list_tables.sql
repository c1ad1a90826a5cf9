SELECT name FROM sqlite_schema
WHERE type = 'table' AND ?1 = 'main' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
ORDER BY 1