-- Creates a queue table's Index_Expires (used to purge expired messages).
-- Parameters: none
-- The seed's bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
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
