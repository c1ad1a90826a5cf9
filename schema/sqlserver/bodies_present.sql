-- Which of these body ids have a row in NimbusBodies: the object-store sweep checks the objects
-- it listed a few hundred at a time (an object without a row is an orphan).
-- Parameters: 1 the ids (nvarchar(max): a JSON array of strings)
-- Returns: Id (varchar) of each that has a row
SELECT CAST(b.[Id] AS varchar(36)) AS [Id] FROM {schema}.[NimbusBodies] AS b
WHERE b.[Id] IN (SELECT CAST(listed.[value] AS uniqueidentifier) FROM OPENJSON(@P1) AS listed);
