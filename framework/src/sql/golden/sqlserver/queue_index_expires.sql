CREATE NONCLUSTERED INDEX [Index_Expires]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [Expires] ASC
)
INCLUDE
(
    [Id],
    [RowVersion]
)