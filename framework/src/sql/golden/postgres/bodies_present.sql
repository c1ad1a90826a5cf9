SELECT b."Id"::text FROM "Zeb]ra ""x"" 'y'"."NimbusBodies" AS b
WHERE b."Id" IN (SELECT listed.value::uuid FROM json_array_elements_text(CAST($1::text AS json)) AS listed)