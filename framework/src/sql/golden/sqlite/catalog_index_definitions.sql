SELECT il."name" AS "IndexName", 'btree' AS "IndexType", il."partial" AS "Filtered",
    ii."name" AS "ColumnName", ii."seqno" + 1 AS "KeyOrdinal", 0 AS "Included"
FROM pragma_index_list(?2) AS il
JOIN pragma_index_info(il."name") AS ii
WHERE ?1 = 'main'
ORDER BY 1, 5