SELECT "Queue", count(*), COALESCE(sum("Size"), 0),
       count("DeadLetteredAt"), count("Store"), min("StoredAt")
FROM "NimbusBodies"
GROUP BY "Queue"
ORDER BY "Queue"