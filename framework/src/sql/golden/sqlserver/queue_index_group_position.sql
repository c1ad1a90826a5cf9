CREATE NONCLUSTERED INDEX [Index_GroupPosition]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [GroupPosition] ASC,
    [GroupKey] ASC
)