CREATE NONCLUSTERED INDEX [Index_RowVersion]
ON {table}
(
    [RowVersion] ASC
)
