SELECT "Queue", count(*), COALESCE(sum("Size"), 0)::bigint,
       count("DeadLetteredAt"), count("Store"), min("StoredAt")
FROM "Zeb]ra ""x"" 'y'"."NimbusBodies"
GROUP BY "Queue"
ORDER BY "Queue"