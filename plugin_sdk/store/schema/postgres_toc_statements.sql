-- m030_toc_triggers_per_statement (PostgreSQL only).
--
-- The ranking refresh plans toc_rank_source (a view of many subqueries) on
-- every call: 3 to 15 ms of planning for a few ids, where running the plan
-- takes well under 1 ms. Its plan for `memory_id = ANY (ids)` is the same
-- for any ids (memories' primary key, then the subqueries per row): made
-- once per session, kept.
ALTER FUNCTION memsdk_toc_refresh(bigint[]) SET plan_cache_mode = force_generic_plan;

-- The insert and delete triggers of composites and composite_members run
-- once a statement, for all its rows (as toc_memory_insert): a statement of
-- many members ranks each member and head once, after the statement, when
-- the row triggers ranked the head again for each member. A row's ranking
-- reads the tables as the statement left them, so the end state is the
-- same. (Update triggers name columns, which a transition table does not
-- allow: they stay per row.)

CREATE OR REPLACE FUNCTION toc_composite_insert() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memsdk_toc_refresh(ARRAY(SELECT DISTINCT head_memory_id FROM new_rows));
    RETURN NULL;
END $$;
DROP TRIGGER toc_composite_insert ON composites;
CREATE TRIGGER toc_composite_insert AFTER INSERT ON composites
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION toc_composite_insert();

CREATE OR REPLACE FUNCTION toc_composite_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memsdk_toc_refresh(ARRAY(SELECT DISTINCT head_memory_id FROM old_rows));
    RETURN NULL;
END $$;
DROP TRIGGER toc_composite_delete ON composites;
CREATE TRIGGER toc_composite_delete AFTER DELETE ON composites
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION toc_composite_delete();

CREATE OR REPLACE FUNCTION toc_member_insert() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memsdk_toc_refresh(ARRAY(
        SELECT member_memory_id FROM new_rows
        UNION SELECT c.head_memory_id FROM composites c
              WHERE c.id IN (SELECT composite_id FROM new_rows)));
    RETURN NULL;
END $$;
DROP TRIGGER toc_member_insert ON composite_members;
CREATE TRIGGER toc_member_insert AFTER INSERT ON composite_members
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION toc_member_insert();

CREATE OR REPLACE FUNCTION toc_member_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memsdk_toc_refresh(ARRAY(
        SELECT member_memory_id FROM old_rows
        UNION SELECT c.head_memory_id FROM composites c
              WHERE c.id IN (SELECT composite_id FROM old_rows)));
    RETURN NULL;
END $$;
DROP TRIGGER toc_member_delete ON composite_members;
CREATE TRIGGER toc_member_delete AFTER DELETE ON composite_members
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION toc_member_delete();
