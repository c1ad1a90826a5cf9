-- Creates a queue table's Index_RowVersion (the FIFO order of receive and peek).
-- Parameters: none
-- The seed's bare statement; auto-create wraps it in index_if_missing.sql so it runs only when missing.
CREATE NONCLUSTERED INDEX [Index_RowVersion]
ON [Zeb]]ra "x" 'y'].[it's [Wal]]]] "rus"]
(
    [RowVersion] ASC
)
