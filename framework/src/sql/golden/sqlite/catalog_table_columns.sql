SELECT c.name FROM pragma_table_info(?2) AS c
WHERE ?1 = 'main'
ORDER BY c.cid