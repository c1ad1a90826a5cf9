WITH message AS (
    SELECT TOP (1) *
    FROM [Zeb]]ra "x" 'y'].[NimbusMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [VisibleAfter], [MessageId])
DELETE FROM message
OUTPUT deleted.[MessageId], CAST(NULL AS varchar(255)), CAST(NULL AS varchar(255)),
    CAST(NULL AS nvarchar(max)), deleted.[Body],
    CAST(CASE WHEN deleted.[ExpiresAt] IS NULL THEN 0
              WHEN deleted.[ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    deleted.[ExpiresAt];