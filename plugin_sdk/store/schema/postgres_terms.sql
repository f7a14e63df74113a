-- PostgreSQL, migration m028_search_terms: how many live memories hold each word.
-- Owner: plugin_sdk/store/postgres/search.py (read); kept by the triggers below.
--
-- Search leaves a word held by more than its cutoff of memories out of candidate
-- generation (plugin_sdk/store/search/engine.py). FTS5 counts a word's rows
-- from its index alone; a GIN index gives row ids only through the table, so
-- counting up to the cutoff read about a thousand rows a common word (1 ms
-- each at 100,000 memories, most of a long query's time). This table holds
-- the count of every lexeme of the live memories' `search` column, one row a
-- lexeme, a lexeme no live memory holds has no row (so a forgotten memory's
-- words leave with it). Writers already serialize on the store's write lock
-- and on search_stats' one row, so these rows add no contention.
CREATE TABLE search_terms (
    lexeme text PRIMARY KEY,
    rows bigint NOT NULL
);
INSERT INTO search_terms (lexeme, rows)
    SELECT u.lexeme, count(*) FROM memories m CROSS JOIN LATERAL unnest(m.search) u
    WHERE m.status = 'active' GROUP BY u.lexeme;

-- Add each lexeme's change of count; drop the lexemes no live memory holds.
CREATE FUNCTION search_terms_apply(lexemes text[], deltas bigint[]) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF lexemes IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO search_terms AS t (lexeme, rows)
        SELECT l, d FROM unnest(lexemes, deltas) AS x(l, d) ORDER BY l
        ON CONFLICT (lexeme) DO UPDATE SET rows = t.rows + excluded.rows;
    DELETE FROM search_terms WHERE lexeme = ANY (lexemes) AND rows <= 0;
END $$;

CREATE FUNCTION search_terms_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE ls text[]; ds bigint[];
BEGIN
    SELECT array_agg(lexeme ORDER BY lexeme), array_agg(n ORDER BY lexeme) INTO ls, ds
    FROM (SELECT u.lexeme, count(*) AS n FROM new_rows r CROSS JOIN LATERAL unnest(r.search) u
          WHERE r.status = 'active' GROUP BY u.lexeme) c;
    PERFORM search_terms_apply(ls, ds);
    RETURN NULL;
END $$;
CREATE FUNCTION search_terms_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE ls text[]; ds bigint[];
BEGIN
    SELECT array_agg(lexeme ORDER BY lexeme), array_agg(-n ORDER BY lexeme) INTO ls, ds
    FROM (SELECT u.lexeme, count(*) AS n FROM old_rows r CROSS JOIN LATERAL unnest(r.search) u
          WHERE r.status = 'active' GROUP BY u.lexeme) c;
    PERFORM search_terms_apply(ls, ds);
    RETURN NULL;
END $$;
-- An update counts the lexemes of its new live rows and takes away its old
-- ones', leaving out the rows whose status and words it did not change (a seen
-- count, a strength, a time): most updates of memories change neither.
CREATE FUNCTION search_terms_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE ls text[]; ds bigint[];
BEGIN
    SELECT array_agg(lexeme ORDER BY lexeme), array_agg(n ORDER BY lexeme) INTO ls, ds
    FROM (SELECT lexeme, sum(s) AS n FROM (
              SELECT u.lexeme, 1 AS s FROM new_rows r CROSS JOIN LATERAL unnest(r.search) u
              WHERE r.status = 'active' AND NOT EXISTS (
                  SELECT 1 FROM old_rows o
                  WHERE o.id = r.id AND o.status = 'active' AND o.search = r.search)
              UNION ALL
              SELECT u.lexeme, -1 FROM old_rows r CROSS JOIN LATERAL unnest(r.search) u
              WHERE r.status = 'active' AND NOT EXISTS (
                  SELECT 1 FROM new_rows n
                  WHERE n.id = r.id AND n.status = 'active' AND n.search = r.search)
          ) changes GROUP BY lexeme HAVING sum(s) <> 0) c;
    PERFORM search_terms_apply(ls, ds);
    RETURN NULL;
END $$;
CREATE TRIGGER search_terms_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_terms_insert();
CREATE TRIGGER search_terms_delete AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_terms_delete();
CREATE TRIGGER search_terms_update AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_terms_update();
