-- PostgreSQL, migration m031_search_postings: each live memory's lexemes, as an
-- inverted index search reads in key order.
-- Owner: plugin_sdk/store/postgres/search.py (read); kept by the triggers below.
--
-- Search scores a rare word's rows by bm25, which needs each row's count of
-- the word and its length. Through the GIN index those come from the heap:
-- a word of 500 rows is 500 heap pages and 500 ts_rank_cd calls (8 to 12 ms
-- a query at 100,000 memories, most of a slow search). Here one row a live
-- memory and lexeme holds them; its primary key (lexeme, memory_id) INCLUDEs
-- every column search reads, so a word's rows are one index-only range scan,
-- in memory id order (two words' rows then merge for a phrase). `project`
-- and `shared` are the read rule's inputs (visibility.readable_sql), copied
-- so that the wall is applied in the scan. A memory has rows here exactly
-- while it is live, as in search_terms, so a forgotten memory's words leave
-- with it. Only memories' own triggers write here: each posting is derived
-- from its memory's current row, so a changed or removed memory finds its
-- postings by the lexemes of its old `search`.
CREATE TABLE search_postings (
    lexeme text NOT NULL,
    memory_id bigint NOT NULL,
    tf integer NOT NULL,
    len integer NOT NULL,
    project text NOT NULL,
    shared boolean NOT NULL,
    PRIMARY KEY (lexeme, memory_id) INCLUDE (tf, len, project, shared)
);
INSERT INTO search_postings (lexeme, memory_id, tf, len, project, shared)
    SELECT u.lexeme, m.id, cardinality(u.positions), m.search_len, m.project,
           m.scope = 'global' AND m.shareable = 1
    FROM memories m CROSS JOIN LATERAL unnest(m.search) u
    WHERE m.status = 'active' ORDER BY 1, 2;

CREATE FUNCTION search_postings_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_postings (lexeme, memory_id, tf, len, project, shared)
        SELECT u.lexeme, r.id, cardinality(u.positions), r.search_len, r.project,
               r.scope = 'global' AND r.shareable = 1
        FROM new_rows r CROSS JOIN LATERAL unnest(r.search) u
        WHERE r.status = 'active' ORDER BY 1, 2;
    RETURN NULL;
END $$;
CREATE FUNCTION search_postings_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_postings p USING (
        SELECT u.lexeme, r.id FROM old_rows r CROSS JOIN LATERAL unnest(r.search) u
        WHERE r.status = 'active'
    ) gone WHERE p.lexeme = gone.lexeme AND p.memory_id = gone.id;
    RETURN NULL;
END $$;
-- An update rewrites the postings of the rows whose live status, words,
-- length or read rule it changed (a row whose id it changed, too); most
-- updates of memories change none of them (a seen count, a strength, a time).
CREATE FUNCTION search_postings_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_postings p USING (
        SELECT u.lexeme, o.id FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id
        CROSS JOIN LATERAL unnest(o.search) u
        WHERE o.status = 'active' AND (n.id IS NULL
           OR (n.status, n.search, n.search_len, n.project, n.scope, n.shareable)
              IS DISTINCT FROM (o.status, o.search, o.search_len, o.project, o.scope, o.shareable))
    ) gone WHERE p.lexeme = gone.lexeme AND p.memory_id = gone.id;
    INSERT INTO search_postings (lexeme, memory_id, tf, len, project, shared)
        SELECT u.lexeme, n.id, cardinality(u.positions), n.search_len, n.project,
               n.scope = 'global' AND n.shareable = 1
        FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id
        CROSS JOIN LATERAL unnest(n.search) u
        WHERE n.status = 'active' AND (o.id IS NULL
           OR (n.status, n.search, n.search_len, n.project, n.scope, n.shareable)
              IS DISTINCT FROM (o.status, o.search, o.search_len, o.project, o.scope, o.shareable))
        ORDER BY 1, 2;
    RETURN NULL;
END $$;
CREATE TRIGGER search_postings_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_postings_insert();
CREATE TRIGGER search_postings_delete AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_postings_delete();
CREATE TRIGGER search_postings_update AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_postings_update();
