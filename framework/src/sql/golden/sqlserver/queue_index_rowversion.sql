CREATE NONCLUSTERED INDEX [Index_RowVersion]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [RowVersion] ASC
)