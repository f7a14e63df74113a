-- The undo recording's trigger function (plugin_sdk/store/postgres/undo_log.py).
--
-- Attached as the trigger memsdk_undo (AFTER INSERT OR UPDATE OR DELETE, FOR
-- EACH ROW) to every table a recording covers, with the table's key columns
-- as its arguments, by the first recording that finds it missing; it fires
-- only WHEN the transaction-local setting memsdk.undo is 'on', which a
-- recording sets for its duration. Loaded with the schema, or by the first
-- recording of a store made before this file was part of it. For each
-- row a statement changes it logs the first change of that key in the
-- connection's temporary table memsdk_undo_log (seq, tbl, op, key: a JSON
-- array of the key's values) and, for an update or a delete, copies the row
-- as it was (OLD, typed: a temporary table made LIKE the covered one) into
-- pg_temp.memsdk_undo_old_<table oid>. An update that moves a row to another
-- key logs the new key too, as an insert, so undo removes it there.
CREATE OR REPLACE FUNCTION memsdk_undo_record() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed record;
    old_key jsonb;
    new_key jsonb;
    logged bigint;
    copy text := 'memsdk_undo_old_' || TG_RELID::bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        changed := NEW;
    ELSE
        changed := OLD;
    END IF;
    SELECT jsonb_agg(to_jsonb(changed) -> a.name ORDER BY a.n) INTO old_key
        FROM unnest(TG_ARGV) WITH ORDINALITY AS a(name, n);
    INSERT INTO pg_temp.memsdk_undo_log (tbl, op, key)
        VALUES (TG_TABLE_NAME, lower(TG_OP), old_key)
        ON CONFLICT (tbl, key) DO NOTHING
        RETURNING seq INTO logged;
    IF logged IS NOT NULL AND TG_OP <> 'INSERT' THEN
        IF to_regclass('pg_temp.' || copy) IS NULL THEN
            EXECUTE format(
                'CREATE TEMP TABLE %I (memsdk_seq bigint PRIMARY KEY, LIKE %I.%I) ON COMMIT DROP',
                copy, TG_TABLE_SCHEMA, TG_TABLE_NAME);
        END IF;
        EXECUTE format('INSERT INTO pg_temp.%I SELECT $1, ($2).*', copy) USING logged, OLD;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        SELECT jsonb_agg(to_jsonb(NEW) -> a.name ORDER BY a.n) INTO new_key
            FROM unnest(TG_ARGV) WITH ORDINALITY AS a(name, n);
        IF new_key IS DISTINCT FROM old_key THEN
            INSERT INTO pg_temp.memsdk_undo_log (tbl, op, key)
                VALUES (TG_TABLE_NAME, 'insert', new_key)
                ON CONFLICT (tbl, key) DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
END $$;
