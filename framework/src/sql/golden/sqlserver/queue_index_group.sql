CREATE NONCLUSTERED INDEX [Index_Group]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [GroupKey] ASC,
    [RowVersion] ASC
)