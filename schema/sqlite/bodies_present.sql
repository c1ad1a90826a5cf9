-- Which of these body ids have a row in NimbusBodies: the object-store sweep checks the objects
-- it listed a few hundred at a time (an object without a row is an orphan).
-- Parameters: 1 the ids (text: a JSON array of strings, as the ids are stored)
-- Returns: Id (text) of each that has a row
SELECT b."Id" FROM "NimbusBodies" AS b
WHERE b."Id" IN (SELECT listed.value FROM json_each(?1) AS listed)
