CREATE NONCLUSTERED INDEX [Index_Priority]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [Priority] DESC,
    [RowVersion] ASC
)