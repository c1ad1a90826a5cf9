SELECT t.table_name::text FROM information_schema.tables AS t
WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE'
    AND (SELECT count(*) FROM information_schema.columns AS c
         WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name
             AND c.column_name IN ('id', 'headers', 'body', 'seq')) = 4
ORDER BY 1