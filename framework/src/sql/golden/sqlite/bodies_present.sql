SELECT b."Id" FROM "NimbusBodies" AS b
WHERE b."Id" IN (SELECT listed.value FROM json_each(?1) AS listed)