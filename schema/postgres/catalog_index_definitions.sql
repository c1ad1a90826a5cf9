-- Lists the definition of every index of a table: one row per key or included column.
-- Parameters: 1 schema name (text, a value), 2 table name (text, a value)
-- Returns: IndexName (text), IndexType (text: the access method, btree for the seed's indexes), Filtered (boolean: a partial index), ColumnName (text, NULL for an expression), KeyOrdinal (integer: 1, 2, ... for key columns, 0 for INCLUDE columns), Included (boolean: an INCLUDE column)
-- PostgreSQL has no clustered indexes in SQL Server's sense (every table is a heap); the
-- equivalent check is the access method (a hash index cannot give the receive order).
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
