SELECT ic.relname::text AS "IndexName", am.amname::text AS "IndexType",
    (ix.indpred IS NOT NULL) AS "Filtered", a.attname::text AS "ColumnName",
    (CASE WHEN k.n <= ix.indnkeyatts THEN k.n ELSE 0 END)::integer AS "KeyOrdinal",
    (k.n > ix.indnkeyatts) AS "Included"
FROM pg_catalog.pg_index AS ix
JOIN pg_catalog.pg_class AS t ON t.oid = ix.indrelid
JOIN pg_catalog.pg_namespace AS ns ON ns.oid = t.relnamespace
JOIN pg_catalog.pg_class AS ic ON ic.oid = ix.indexrelid
JOIN pg_catalog.pg_am AS am ON am.oid = ic.relam
CROSS JOIN LATERAL unnest(ix.indkey::smallint[]) WITH ORDINALITY AS k(attnum, n)
LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = t.oid AND a.attnum = k.attnum
WHERE ns.nspname = $1 AND t.relname = $2
ORDER BY 1, 5, 4