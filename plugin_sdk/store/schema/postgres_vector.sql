-- pgvector's objects for memsdk on PostgreSQL: loaded after postgres.sql,
-- into the same schema, only when `CREATE EXTENSION vector` succeeded.
--
-- The design is SQLite's sqlite-vec mirror (store/tables/vectors.py):
-- memory_vectors (float32 bytes, every model) stays the source of truth and
-- plain code keeps working without the extension; memory_vectors_pg mirrors
-- the rows of ONE model (vector_state.mirror_model, mirror_dim) as pgvector
-- vectors with an HNSW cosine index, as memory_vectors_vec does on SQLite.
-- The triggers of postgres.sql list each mirrored memory whose vector
-- changed in vector_changes; memsdk_vector_mirror_catch_up() applies that
-- list. The mirror is one model because an HNSW index needs one dimension.
--
-- The owner's statements, one per SQLite one:
--   rebuild_mirror(model, dim): SELECT memsdk_vector_mirror_rebuild(%s, %s)
--   drop_mirror():              SELECT memsdk_vector_mirror_drop()
--   catch_up():                 SELECT memsdk_vector_mirror_catch_up()
--   neighbours(blob, k):        SELECT memory_id, embedding <=> memsdk_vector(%s) AS distance
--                               FROM memory_vectors_pg ORDER BY distance LIMIT %s
--   (distance is cosine distance, 1 - cosine similarity, as sqlite-vec's.)
-- HNSW indexes vectors of up to 2,000 dimensions; a wider model is mirrored
-- without the index (exact search). pgvector's approximate scan returns at
-- most hnsw.ef_search rows (default 40): set it to at least k per query
-- (SET LOCAL hnsw.ef_search = ...).

-- A memory_vectors.vector (float32, little-endian) as a pgvector vector,
-- decoded in SQL (no bytea -> vector cast exists).
CREATE OR REPLACE FUNCTION memsdk_vector(raw bytea) RETURNS vector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg(
        (CASE WHEN bits >= 2147483648 THEN -1 ELSE 1 END)
        * CASE WHEN (bits >> 23) & 255 = 0
               THEN (bits & 8388607) * 2::double precision ^ -149
               ELSE ((bits & 8388607) + 8388608)
                    * 2::double precision ^ (((bits >> 23) & 255) - 150) END
        ORDER BY i)::real[]::vector
    FROM (SELECT i, get_byte(raw, 4 * i)::bigint
                    + (get_byte(raw, 4 * i + 1)::bigint << 8)
                    + (get_byte(raw, 4 * i + 2)::bigint << 16)
                    + (get_byte(raw, 4 * i + 3)::bigint << 24) AS bits
          FROM generate_series(0, length(raw) / 4 - 1) AS i) AS f
$$;

-- owner: plugin_sdk/store/tables/vectors.py
-- The mirror: one model's vectors, by memory (the column's dimension is set
-- by memsdk_vector_mirror_rebuild).
CREATE TABLE IF NOT EXISTS memory_vectors_pg (
    memory_id BIGINT PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    embedding vector NOT NULL
);

-- Mirror `model` from scratch (run inside the caller's transaction): the
-- column typed vector(dim), the rows copied, the HNSW index built after the
-- load (faster than row by row), vector_state set, vector_changes emptied.
-- Returns how many rows the mirror holds.
CREATE OR REPLACE FUNCTION memsdk_vector_mirror_rebuild(model text, dim integer)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    size bigint;
BEGIN
    DROP INDEX IF EXISTS memory_vectors_pg_hnsw;
    DELETE FROM memory_vectors_pg;
    EXECUTE format('ALTER TABLE memory_vectors_pg ALTER COLUMN embedding TYPE vector(%s)', dim);
    INSERT INTO memory_vectors_pg (memory_id, embedding)
        SELECT v.memory_id, memsdk_vector(v.vector) FROM memory_vectors v
        WHERE v.model = memsdk_vector_mirror_rebuild.model AND v.dim = memsdk_vector_mirror_rebuild.dim;
    IF dim <= 2000 THEN
        CREATE INDEX memory_vectors_pg_hnsw ON memory_vectors_pg
            USING hnsw (embedding vector_cosine_ops);
    END IF;
    UPDATE vector_state SET mirror_model = memsdk_vector_mirror_rebuild.model,
                            mirror_dim = memsdk_vector_mirror_rebuild.dim WHERE id = 1;
    DELETE FROM vector_changes;
    SELECT count(*) INTO size FROM memory_vectors_pg;
    RETURN size;
END $$;

-- Remove the mirror's rows and index (the table stays, untyped), as drop_mirror.
CREATE OR REPLACE FUNCTION memsdk_vector_mirror_drop() RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    DROP INDEX IF EXISTS memory_vectors_pg_hnsw;
    DELETE FROM memory_vectors_pg;
    ALTER TABLE memory_vectors_pg ALTER COLUMN embedding TYPE vector;
    UPDATE vector_state SET mirror_model = NULL, mirror_dim = NULL WHERE id = 1;
    DELETE FROM vector_changes;
END $$;

-- Apply vector_changes to the mirror, as catch_up: how many ids it redid.
CREATE OR REPLACE FUNCTION memsdk_vector_mirror_catch_up() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    mirrored text;
    width bigint;
    behind bigint;
BEGIN
    SELECT mirror_model, mirror_dim INTO mirrored, width FROM vector_state WHERE id = 1;
    IF mirrored IS NULL THEN
        RETURN 0;
    END IF;
    SELECT count(*) INTO behind FROM vector_changes;
    IF behind > 0 THEN
        DELETE FROM memory_vectors_pg WHERE memory_id IN (SELECT memory_id FROM vector_changes);
        INSERT INTO memory_vectors_pg (memory_id, embedding)
            SELECT v.memory_id, memsdk_vector(v.vector) FROM vector_changes c
            JOIN memory_vectors v ON v.memory_id = c.memory_id AND v.model = mirrored
                                 AND v.dim = width;
        DELETE FROM vector_changes;
    END IF;
    RETURN behind;
END $$;
