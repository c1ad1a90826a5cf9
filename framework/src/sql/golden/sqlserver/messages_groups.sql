SELECT TOP (@P2) [GroupKey], CAST(COUNT(*) AS bigint) AS [Waiting],
    MAX(CASE WHEN [VisibleAfter] > SYSUTCDATETIME()
              AND [GroupPlace] < DATEDIFF_BIG(microsecond, CAST('1970-01-01' AS datetime2), SYSUTCDATETIME())
             THEN [VisibleAfter] END) AS [HeldUntil]
FROM [Zeb]]ra "x" 'y'].[NimbusMessages]
WHERE [Destination] = @P1 AND [GroupKey] IS NOT NULL
GROUP BY [GroupKey]
ORDER BY COUNT(*) DESC, [GroupKey];