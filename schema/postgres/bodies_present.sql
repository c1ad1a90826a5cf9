-- Which of these body ids have a row in NimbusBodies: the object-store sweep checks the objects
-- it listed a few hundred at a time (an object without a row is an orphan).
-- Parameters: 1 the ids (text: a JSON array of strings)
-- Returns: Id (text) of each that has a row
SELECT b."Id"::text FROM {schema}."NimbusBodies" AS b
WHERE b."Id" IN (SELECT listed.value::uuid FROM json_array_elements_text(CAST($1::text AS json)) AS listed)
