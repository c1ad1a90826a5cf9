SELECT t.name FROM sqlite_schema AS t
WHERE t.type = 'table' AND ?1 = 'main' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\'
    AND (SELECT count(*) FROM pragma_table_info(t.name) AS c
         WHERE c.name IN ('Id', 'Headers', 'Body', 'RowVersion')) = 4
ORDER BY 1