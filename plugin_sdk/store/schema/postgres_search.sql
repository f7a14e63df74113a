-- PostgreSQL: the full-text index of the live memories (plugin_sdk/store/postgres/search.py).
-- Loaded after postgres.sql. SQLite's memories_fts (FTS5, porter stemming) has no
-- table here: the index is a generated tsvector column of memories.

-- Text search configuration memsdk: English Snowball stemming and no stopword
-- list (stopwords are the query parser's, plugin_sdk/store/search/query.py).
CREATE TEXT SEARCH DICTIONARY memsdk_stem (TEMPLATE = snowball, language = english);
CREATE TEXT SEARCH CONFIGURATION memsdk (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION memsdk
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH memsdk_stem;

-- The text as the query parser cuts it: runs of letters and digits, the rest a space.
CREATE FUNCTION memsdk_words(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT regexp_replace($1, '[^[:alnum:]]+', ' ', 'g') $$;

-- How many tokens: the document length bm25 normalises by (FTS5 counts the same).
-- The runs of letters and digits are the words memsdk_words leaves, counted in
-- one pass (splitting memsdk_words' text took three: a third of a write's time).
CREATE FUNCTION memsdk_word_count(text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT regexp_count($1, '[[:alnum:]]+') $$;

ALTER TABLE memories ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('memsdk', memsdk_words(content))) STORED;
ALTER TABLE memories ADD COLUMN search_len integer
    GENERATED ALWAYS AS (memsdk_word_count(content)) STORED;
-- fastupdate on: a write's entries wait in the index's pending list, unsorted,
-- until the list passes gin_pending_list_limit and the writer merges it into
-- the index in one sorted pass. Every query scans the whole list, so the
-- store's connections keep it at 64 kB (postgres/database.py); a write_many
-- batch raises the limit for its transaction and merges its rows at its end
-- (gin_clean_pending_list, postgres/memories.py), about half the cost of
-- entering each row's words at once (fastupdate = off). Other sessions get
-- the server's limit (4 MB by default), and a bulk write of theirs may wait
-- in the list until autovacuum; with a large list the planner prefers a
-- sequential scan of memories (docs/benchmarks.md#postgresql).
CREATE INDEX memories_search ON memories USING gin (search) WITH (fastupdate = on)
    WHERE status = 'active';

-- Corpus counts for bm25: live rows and their total length, kept by statement triggers.
CREATE TABLE search_stats (
    id integer PRIMARY KEY CHECK (id = 1),
    rows bigint NOT NULL,
    total_len bigint NOT NULL,
    rowid bigint GENERATED ALWAYS AS (id) STORED  -- every table has one (postgres.sql)
);
INSERT INTO search_stats (id, rows, total_len)
    SELECT 1, count(*), coalesce(sum(search_len), 0) FROM memories WHERE status = 'active';

CREATE FUNCTION search_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE search_stats SET rows = rows + d.n, total_len = total_len + d.l
    FROM (SELECT count(*) AS n, coalesce(sum(search_len), 0) AS l
          FROM new_rows WHERE status = 'active') d
    WHERE id = 1 AND d.n > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION search_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE search_stats SET rows = rows - d.n, total_len = total_len - d.l
    FROM (SELECT count(*) AS n, coalesce(sum(search_len), 0) AS l
          FROM old_rows WHERE status = 'active') d
    WHERE id = 1 AND d.n > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION search_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE search_stats SET rows = rows + n.n - o.n, total_len = total_len + n.l - o.l
    FROM (SELECT count(*) AS n, coalesce(sum(search_len), 0) AS l
          FROM new_rows WHERE status = 'active') n,
         (SELECT count(*) AS n, coalesce(sum(search_len), 0) AS l
          FROM old_rows WHERE status = 'active') o
    WHERE id = 1 AND (n.n, n.l) IS DISTINCT FROM (o.n, o.l);
    RETURN NULL;
END $$;
CREATE TRIGGER search_stats_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_stats_insert();
CREATE TRIGGER search_stats_delete AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_stats_delete();
CREATE TRIGGER search_stats_update AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_stats_update();
