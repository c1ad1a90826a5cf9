-- Lists the definition of every index of a table: one row per key column.
-- Parameters: 1 schema name (text, a value; only 'main' matches), 2 table name (text, a value)
-- Returns: IndexName (text), IndexType (text: always btree), Filtered (0/1: a partial index), ColumnName (text, NULL for an expression), KeyOrdinal (integer: 1, 2, ...), Included (always 0: SQLite has no INCLUDE)
-- SQLite has neither clustered indexes in SQL Server's sense nor INCLUDE columns: its seed
-- indexes carry the would-be included columns as trailing key columns.
SELECT il."name" AS "IndexName", 'btree' AS "IndexType", il."partial" AS "Filtered",
    ii."name" AS "ColumnName", ii."seqno" + 1 AS "KeyOrdinal", 0 AS "Included"
FROM pragma_index_list(?2) AS il
JOIN pragma_index_info(il."name") AS ii
WHERE ?1 = 'main'
ORDER BY 1, 5
