SELECT CAST(b.[Id] AS varchar(36)) AS [Id] FROM [Zeb]]ra "x" 'y'].[NimbusBodies] AS b
WHERE b.[Id] IN (SELECT CAST(listed.[value] AS uniqueidentifier) FROM OPENJSON(@P1) AS listed);