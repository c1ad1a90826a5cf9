CREATE NONCLUSTERED INDEX [Index_Expires]
ON {table}
(
    [Expires] ASC
)
INCLUDE
(
    [Id],
    [RowVersion]
)
