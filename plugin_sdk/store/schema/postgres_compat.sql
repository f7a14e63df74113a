-- SQLite's functions on PostgreSQL: what the store's SQL calls that
-- PostgreSQL lacks or spells differently, so the owners' statements run
-- unchanged on both engines. Loaded before postgres.sql, into the same schema
-- (the first schema of the search_path); every object is created with
-- CREATE OR REPLACE (the collation with IF NOT EXISTS), so loading twice is safe.
--
-- Each function gives SQLite's answer for the forms our SQL uses (grep the
-- owners for the name); where PostgreSQL's static types cannot say what
-- SQLite's dynamic ones do, the comment above the function says what differs.
-- tests/store/test_postgres_schema.py compares them with sqlite3.

-- COLLATE NOCASE: PostgreSQL folds the name to "nocase", so `name = ?
-- COLLATE NOCASE` runs as written once a collation of that name exists. ICU,
-- case-insensitive and accent-sensitive (level 2). SQLite's NOCASE folds only
-- ASCII A-Z; this one folds every script's case (and, being ICU level 2, also
-- width: full-width 'Ａ' equals 'a'). Nondeterministic collations refuse LIKE.
CREATE COLLATION IF NOT EXISTS nocase (
    provider = icu, locale = 'und-u-ks-level2', deterministic = false
);

-- hex(X): the upper-case hex of X's bytes (text as UTF-8), as SQLite.
-- IMMUTABLE although convert_to is STABLE: a database's encoding never
-- changes, and memories.fts_scope (a stored generated column) needs it.
CREATE OR REPLACE FUNCTION hex(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN upper(encode(convert_to(value, 'UTF8'), 'hex'));

CREATE OR REPLACE FUNCTION hex(value bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN upper(encode(value, 'hex'));

-- instr(X, Y): 1-based position of Y in X, 0 when absent, NULL when either is NULL.
CREATE OR REPLACE FUNCTION instr(haystack text, needle text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN strpos(haystack, needle);

-- glob(pattern, X): SQLite's argument order (X GLOB pattern is glob(pattern, X)).
-- * any run, ? one character, [...] a set ([^...] negated, ranges); case-sensitive.
CREATE OR REPLACE FUNCTION memsdk_glob_regex(pattern text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    out text := '^';
    i int := 1;
    n int := length(pattern);
    ch text;
    j int;
BEGIN
    WHILE i <= n LOOP
        ch := substr(pattern, i, 1);
        IF ch = '*' THEN
            out := out || '.*';
        ELSIF ch = '?' THEN
            out := out || '.';
        ELSIF ch = '[' THEN
            j := i + 1;
            IF substr(pattern, j, 1) = '^' THEN j := j + 1; END IF;
            IF substr(pattern, j, 1) = ']' THEN j := j + 1; END IF;
            WHILE j <= n AND substr(pattern, j, 1) <> ']' LOOP j := j + 1; END LOOP;
            IF j > n THEN
                RETURN '^(?!)';  -- an unclosed set matches nothing in SQLite
            END IF;
            out := out || '[' || replace(substr(pattern, i + 1, j - i - 1), '\', '\\') || ']';
            i := j;
        ELSE
            out := out || regexp_replace(ch, '([.^$*+?()\[\]{}|\\-])', '\\\1');
        END IF;
        i := i + 1;
    END LOOP;
    RETURN out || '$';
END $$;

CREATE OR REPLACE FUNCTION glob(pattern text, value text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (value ~ memsdk_glob_regex(pattern))::int;

-- typeof(X) for the forms used (`typeof(column) = 'text'`): PostgreSQL's
-- columns have one type, so this names the SQLite storage class of the
-- argument's type: 'null' for NULL, else by type.
CREATE OR REPLACE FUNCTION typeof(value anyelement) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE
        WHEN value IS NULL THEN 'null'
        WHEN pg_typeof(value) IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                                  'boolean'::regtype) THEN 'integer'
        WHEN pg_typeof(value) IN ('real'::regtype, 'double precision'::regtype,
                                  'numeric'::regtype) THEN 'real'
        WHEN pg_typeof(value) = 'bytea'::regtype THEN 'blob'
        ELSE 'text' END $$;

CREATE OR REPLACE FUNCTION typeof(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'text' END $$;

-- Scalar max(a, b, ...) and min(a, b, ...): SQLite's are NULL when any
-- argument is NULL (greatest/least skip NULLs). Two to five arguments;
-- anycompatible lets a bigint column meet an integer or float parameter.
-- The one-argument aggregates max(x)/min(x) stay PostgreSQL's.
CREATE OR REPLACE FUNCTION max(a anycompatible, b anycompatible) RETURNS anycompatible
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE greatest(a, b) END $$;
CREATE OR REPLACE FUNCTION max(a anycompatible, b anycompatible, c anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL THEN NULL ELSE greatest(a, b, c) END $$;
CREATE OR REPLACE FUNCTION max(a anycompatible, b anycompatible, c anycompatible,
                               d anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL THEN NULL
                ELSE greatest(a, b, c, d) END $$;
CREATE OR REPLACE FUNCTION max(a anycompatible, b anycompatible, c anycompatible,
                               d anycompatible, e anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL OR e IS NULL THEN NULL
                ELSE greatest(a, b, c, d, e) END $$;
CREATE OR REPLACE FUNCTION min(a anycompatible, b anycompatible) RETURNS anycompatible
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE least(a, b) END $$;
CREATE OR REPLACE FUNCTION min(a anycompatible, b anycompatible, c anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL THEN NULL ELSE least(a, b, c) END $$;
CREATE OR REPLACE FUNCTION min(a anycompatible, b anycompatible, c anycompatible,
                               d anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL THEN NULL
                ELSE least(a, b, c, d) END $$;
CREATE OR REPLACE FUNCTION min(a anycompatible, b anycompatible, c anycompatible,
                               d anycompatible, e anycompatible)
    RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL OR e IS NULL THEN NULL
                ELSE least(a, b, c, d, e) END $$;

-- group_concat(X[, sep]): the non-NULL values joined by ',' (or sep, the
-- separator of the row being appended, as SQLite), NULL for none. Order
-- follows the input (an ordered subquery); PostgreSQL's own spelling with a
-- guaranteed order is string_agg(X, sep ORDER BY ...). DISTINCT works.
CREATE OR REPLACE FUNCTION memsdk_group_concat_step(state text, value text, sep text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN value IS NULL THEN state
                WHEN state IS NULL THEN value
                ELSE state || coalesce(sep, '') || value END;

CREATE OR REPLACE FUNCTION memsdk_group_concat_step(state text, value text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN value IS NULL THEN state
                WHEN state IS NULL THEN value
                ELSE state || ',' || value END;

CREATE OR REPLACE AGGREGATE group_concat(text, text) (
    SFUNC = memsdk_group_concat_step, STYPE = text
);
CREATE OR REPLACE AGGREGATE group_concat(text) (
    SFUNC = memsdk_group_concat_step, STYPE = text
);

-- total(X): the sum as a float, 0.0 over no rows or only NULLs (sum gives NULL).
CREATE OR REPLACE AGGREGATE total(double precision) (
    SFUNC = float8pl, STYPE = double precision, INITCOND = '0',
    COMBINEFUNC = float8pl, PARALLEL = SAFE
);

-- JSON. json_extract returns TEXT (PostgreSQL has no dynamically typed
-- result): a string's value unquoted, a number's digits as written, true and
-- false as '1' and '0' (SQLite's integers), JSON null and a missing path as
-- NULL, an object or array as jsonb's text (SQLite minifies and keeps key
-- order; jsonb writes ", " and ": " and orders keys). Compare a number with
-- a cast: `json_extract(doc, '$.n')::numeric > 0`.
CREATE OR REPLACE FUNCTION memsdk_json_text(value jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE jsonb_typeof(value)
        WHEN 'string' THEN value #>> '{}'
        WHEN 'null' THEN NULL
        WHEN 'boolean' THEN CASE WHEN value = 'true'::jsonb THEN '1' ELSE '0' END
        ELSE value::text END;

-- A SQLite JSON path ('$', '$.a.b', '$."a.b"', '$[0]', '$[#-1]', '$.a[2].b')
-- as a strict jsonpath with quoted keys: a key never reads an array element
-- and an index never reads a key, as in SQLite.
CREATE OR REPLACE FUNCTION memsdk_json_path(path text) RETURNS jsonpath
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    rest text;
    out text := 'strict $';
    m text[];
BEGIN
    IF left(path, 1) <> '$' THEN
        RAISE EXCEPTION 'JSON path error near ''%''', path;
    END IF;
    rest := substr(path, 2);
    WHILE rest <> '' LOOP
        m := regexp_match(rest, '^(\."([^"]*)")');
        IF m IS NULL THEN
            m := regexp_match(rest, '^(\.([^.\[]+))');
        END IF;
        IF m IS NOT NULL THEN
            out := out || '.' || to_json(m[2])::text;
        ELSE
            m := regexp_match(rest, '^(\[([0-9]+|#(-[0-9]+)?)\])');
            IF m IS NULL THEN
                RAISE EXCEPTION 'JSON path error near ''%''', rest;
            END IF;
            IF left(m[2], 1) <> '#' THEN
                out := out || '[' || m[2] || ']';
            ELSIF m[3] IS NULL THEN
                out := out || '[last + 1]';  -- one past the end: nothing there
            ELSE
                out := out || '[last - ' || (-(m[3]::bigint) - 1) || ']';
            END IF;
        END IF;
        rest := substr(rest, length(m[1]) + 1);
    END LOOP;
    RETURN out::jsonpath;
END $$;

CREATE OR REPLACE FUNCTION json_extract(document text, path text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN memsdk_json_text(jsonb_path_query_first(document::jsonb, memsdk_json_path(path),
                                                   '{}', true));

-- SQLite's json_each type names for a json value.
CREATE OR REPLACE FUNCTION memsdk_json_type(value json) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE json_typeof(value)
        WHEN 'string' THEN 'text'
        WHEN 'number' THEN CASE WHEN value::text ~ '[.eE]' THEN 'real' ELSE 'integer' END
        WHEN 'boolean' THEN value::text
        ELSE json_typeof(value) END;

CREATE OR REPLACE FUNCTION memsdk_json_value(value json) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE json_typeof(value)
        WHEN 'string' THEN value #>> '{}'
        WHEN 'null' THEN NULL
        WHEN 'boolean' THEN CASE WHEN value::text = 'true' THEN '1' ELSE '0' END
        ELSE value::text END;

-- json_each(X): one row per element of an array (key '0', '1', ...) or member
-- of an object (key its name), in document order; a scalar gives one row with
-- key NULL. value and atom are text as json_extract's (atom NULL for an array
-- or object); type is SQLite's ('integer', 'real', 'text', 'true', 'false',
-- 'null', 'array', 'object'). Cast value to compare it with a number:
-- `id IN (SELECT value::bigint FROM json_each(?))`.
CREATE OR REPLACE FUNCTION json_each(document text)
    RETURNS TABLE (key text, value text, type text, atom text)
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ROWS 20 AS $$
DECLARE
    parsed json := document::json;
BEGIN
    IF parsed IS NULL THEN
        RETURN;
    END IF;
    IF json_typeof(parsed) = 'array' THEN
        RETURN QUERY SELECT (e.n - 1)::text, memsdk_json_value(e.v), memsdk_json_type(e.v),
                            CASE WHEN json_typeof(e.v) IN ('array', 'object') THEN NULL
                                 ELSE memsdk_json_value(e.v) END
                     FROM pg_catalog.json_array_elements(parsed) WITH ORDINALITY AS e(v, n);
    ELSIF json_typeof(parsed) = 'object' THEN
        RETURN QUERY SELECT e.k, memsdk_json_value(e.v), memsdk_json_type(e.v),
                            CASE WHEN json_typeof(e.v) IN ('array', 'object') THEN NULL
                                 ELSE memsdk_json_value(e.v) END
                     FROM pg_catalog.json_each(parsed) AS e(k, v);
    ELSE
        RETURN QUERY SELECT NULL::text, memsdk_json_value(parsed), memsdk_json_type(parsed),
                            memsdk_json_value(parsed);
    END IF;
END $$;

-- json_array(a, b, ...): a minified JSON array. The arguments must share a
-- type (anycompatible: an integer and a bigint do; an integer and a text
-- need a cast), as PostgreSQL's SQL functions cannot take "any".
CREATE OR REPLACE FUNCTION json_array(VARIADIC items anycompatiblearray) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '[' || coalesce((SELECT string_agg(coalesce(to_jsonb(u.x)::text, 'null'), ','
                                              ORDER BY u.n)
                            FROM unnest(items) WITH ORDINALITY AS u(x, n)), '') || ']' $$;

CREATE OR REPLACE FUNCTION json_array() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '[]';

-- Dates. SQLite keeps a time as whole milliseconds since the Julian epoch
-- (its iJD); memsdk_jd_ms computes exactly that from a time string the way
-- SQLite's date.c does: 'YYYY-MM-DD', optionally followed by spaces or 'T'
-- and 'HH:MM[:SS[.fff...]]' and a zone ('Z', '+HH:MM', '-HH:MM'); 'HH:MM...'
-- alone (on 2000-01-01); 'now' (the statement's time, as SQLite's is per
-- statement); a number (a Julian day). Fields are range-checked as SQLite
-- does (month 1-12, day 1-31 without a per-month check, so '2026-02-31' is
-- 3 March, hour 0-24); anything else is NULL. Times without a zone are UTC.
CREATE OR REPLACE FUNCTION memsdk_jd_ms(value text) RETURNS bigint
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
-- Parsed by position (no regular expression: PostgreSQL's with capture
-- groups cost milliseconds per call); `shape` is the text with every digit 9.
DECLARE
    spaces constant text := E' \t\n\r\f\v';
    s text := value;
    shape text;
    rest text;
    p int := 1;
    n int;
    y bigint := 2000; mo bigint := 1; d bigint := 1;
    h bigint; mi bigint; sec double precision := 0;
    frac text;
    tz bigint := 0;
    c text;
    a bigint; b bigint;
    jd bigint;
    r double precision;
BEGIN
    IF left(s, 1) = '-' AND substr(s, 2, 1) <> '' THEN
        s := substr(s, 2);
    END IF;
    shape := translate(s, '0123456789', '9999999999');
    n := length(s);
    IF left(shape, 10) = '9999-99-99' THEN
        y := left(s, 4)::bigint; mo := substr(s, 6, 2)::bigint; d := substr(s, 9, 2)::bigint;
        IF s <> value THEN y := -y; END IF;
        IF mo < 1 OR mo > 12 OR d < 1 OR d > 31 THEN RETURN NULL; END IF;
        rest := ltrim(substr(s, 11), spaces || 'T');
        p := n - length(rest) + 1;
        IF rest = '' THEN
            h := NULL;  -- a date alone
        ELSIF substr(shape, p, 5) <> '99:99' THEN
            RETURN NULL;
        END IF;
    ELSIF s <> value OR left(shape, 5) <> '99:99' THEN
        IF s = value AND lower(s) = 'now' THEN
            RETURN floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint
                   + 210866760000000;
        END IF;
        IF value ~ '^[[:space:]]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[[:space:]]*$' THEN
            r := value::double precision;
            IF r >= 0 AND r < 5373484.5 THEN
                RETURN trunc(r * 86400000.0 + 0.5)::bigint;
            END IF;
        END IF;
        RETURN NULL;
    END IF;
    IF p <= n THEN
        h := substr(s, p, 2)::bigint; mi := substr(s, p + 3, 2)::bigint;
        IF h > 24 OR mi > 59 THEN RETURN NULL; END IF;
        p := p + 5;
        IF substr(s, p, 1) = ':' THEN
            IF substr(shape, p + 1, 2) <> '99' THEN RETURN NULL; END IF;
            sec := substr(s, p + 1, 2)::double precision;
            IF sec > 59 THEN RETURN NULL; END IF;
            p := p + 3;
            IF substr(s, p, 1) = '.' AND substr(shape, p + 1, 1) = '9' THEN
                rest := substr(s, p + 1);
                frac := left(rest, length(rest) - length(ltrim(rest, '0123456789')));
                sec := sec + frac::double precision / (10::double precision ^ length(frac));
                p := p + 1 + length(frac);
            END IF;
        END IF;
        rest := ltrim(substr(s, p), spaces);
        c := left(rest, 1);
        IF c IN ('+', '-') THEN
            IF translate(substr(rest, 2, 5), '0123456789', '9999999999') <> '99:99' THEN
                RETURN NULL;
            END IF;
            IF substr(rest, 2, 2)::bigint > 14 OR substr(rest, 5, 2)::bigint > 59 THEN
                RETURN NULL;
            END IF;
            tz := (substr(rest, 2, 2)::bigint * 60 + substr(rest, 5, 2)::bigint)
                  * CASE c WHEN '-' THEN -1 ELSE 1 END;
            rest := substr(rest, 7);
        ELSIF c IN ('Z', 'z') THEN
            rest := substr(rest, 2);
        END IF;
        IF ltrim(rest, spaces) <> '' THEN RETURN NULL; END IF;
    END IF;
    IF mo <= 2 THEN y := y - 1; mo := mo + 12; END IF;
    a := y / 100;  -- integer division truncates toward zero, as C's
    b := 2 - a + a / 4;
    jd := (36525 * (y + 4716) / 100 + 306001 * (mo + 1) / 10000 + d + b) * 86400000
          - 131716800000;
    IF h IS NOT NULL THEN
        jd := jd + h * 3600000 + mi * 60000 + trunc(sec * 1000.0 + 0.5)::bigint - tz * 60000;
    END IF;
    RETURN jd;
END $$;

-- SQLite's computeJD on fields (y, month, day, hour, minute, seconds, zone
-- minutes), in milliseconds; one SQL expression, so it inlines.
CREATE OR REPLACE FUNCTION memsdk_jd_fields(y bigint, mo bigint, d bigint, h bigint, mi bigint,
                                            sec double precision, tz bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (36525 * (y - (mo <= 2)::int + 4716) / 100
            + 306001 * (mo + 12 * (mo <= 2)::int + 1) / 10000 + d
            + 2 - (y - (mo <= 2)::int) / 100 + (y - (mo <= 2)::int) / 100 / 4) * 86400000
           - 131716800000
           + h * 3600000 + mi * 60000 + trunc(sec * 1000.0 + 0.5)::bigint - tz * 60000;

-- The store's own stamps (isoformat with microseconds and a zone) by
-- position, in one expression; every other form through memsdk_jd_ms.
-- Cost on this machine: about 40 us a call (memsdk_jd_ms: about 60 us; a
-- regular expression with capture groups cost 2 ms, hence none). Where
-- exact SQLite rounding (whole milliseconds) does not matter, native
-- `extract(epoch FROM t::timestamptz) / 86400 + 2440587.5` is faster.
CREATE OR REPLACE FUNCTION julianday(value text) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN translate(value, '0123456789T', '9999999999 ') IN
             ('9999-99-99 99:99:99.999999+99:99', '9999-99-99 99:99:99.999999-99:99')
        THEN CASE
            WHEN substr(value, 6, 2)::int BETWEEN 1 AND 12
             AND substr(value, 9, 2)::int BETWEEN 1 AND 31
             AND substr(value, 12, 2)::int <= 24 AND substr(value, 15, 2)::int <= 59
             AND substr(value, 18, 2)::int <= 59
             AND substr(value, 28, 2)::int <= 14 AND substr(value, 31, 2)::int <= 59
            THEN memsdk_jd_fields(
                substr(value, 1, 4)::bigint, substr(value, 6, 2)::bigint,
                substr(value, 9, 2)::bigint, substr(value, 12, 2)::bigint,
                substr(value, 15, 2)::bigint,
                substr(value, 18, 2)::double precision
                    + substr(value, 21, 6)::double precision / 1000000.0::double precision,
                (substr(value, 28, 2)::bigint * 60 + substr(value, 31, 2)::bigint)
                    * CASE substr(value, 27, 1) WHEN '-' THEN -1 ELSE 1 END)
                / 86400000.0::double precision
            END
        ELSE memsdk_jd_ms(value) / 86400000.0::double precision
    END;

CREATE OR REPLACE FUNCTION julianday(value double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN value >= 0 AND value < 5373484.5
                THEN trunc(value * 86400000.0 + 0.5) / 86400000.0 END;

-- SQLite's modifiers on a time in milliseconds: '+N days' / hours / minutes
-- / seconds (N may be fractional, singular or plural), '+N months' / years
-- (whole N; day overflow carries into the next month, as SQLite), 'start of
-- day' / month / year. Other modifiers (localtime, utc, weekday N,
-- unixepoch, subsec) are not used by memsdk and raise an error here.
CREATE OR REPLACE FUNCTION memsdk_jd_modify(ms bigint, modifiers text[]) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    modifier text;
    m text[];
    t timestamp;
BEGIN
    FOREACH modifier IN ARRAY coalesce(modifiers, '{}') LOOP
        EXIT WHEN ms IS NULL;
        IF modifier IS NULL THEN RETURN NULL; END IF;
        m := regexp_match(lower(modifier),
            '^[[:space:]]*([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)[[:space:]]*'
            '(day|hour|minute|second|month|year)s?[[:space:]]*$');
        t := timestamp '4714-11-24 12:00:00 BC' + ms * interval '1 millisecond';
        IF m IS NOT NULL THEN
            IF m[2] IN ('day', 'hour', 'minute', 'second') THEN
                ms := ms + trunc(m[1]::double precision * CASE m[2]
                    WHEN 'day' THEN 86400000.0 WHEN 'hour' THEN 3600000.0
                    WHEN 'minute' THEN 60000.0 ELSE 1000.0 END
                    + CASE WHEN m[1] LIKE '-%' THEN -0.5 ELSE 0.5 END)::bigint;
            ELSE
                IF m[1] !~ '^[+-]?[0-9]+$' THEN
                    RAISE EXCEPTION 'memsdk: datetime modifier % needs a whole number', modifier;
                END IF;
                -- SQLite: move the month, keep the day (it carries over), keep the time.
                ms := ms + (extract(epoch FROM
                    (date_trunc('month', t) + (m[1]::bigint * CASE m[2] WHEN 'year' THEN 12 ELSE 1 END)
                        * interval '1 month')
                    + (t - date_trunc('month', t))) - extract(epoch FROM t))::numeric * 1000;
            END IF;
        ELSIF lower(trim(modifier)) IN ('start of day', 'start of month', 'start of year') THEN
            ms := ms - (extract(epoch FROM t)
                        - extract(epoch FROM date_trunc(split_part(lower(trim(modifier)), ' ', 3), t)))
                       ::numeric * 1000;
        ELSE
            RAISE EXCEPTION 'memsdk: datetime modifier % is not supported on PostgreSQL', modifier;
        END IF;
    END LOOP;
    RETURN ms;
END $$;

-- The time in milliseconds as SQLite's datetime/date/time/strftime write it.
CREATE OR REPLACE FUNCTION memsdk_jd_format(ms bigint, format text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN to_char(timestamp '4714-11-24 12:00:00 BC' + ms * interval '1 millisecond', format);

-- datetime(time[, modifier...]) -> 'YYYY-MM-DD HH:MM:SS' (UTC), NULL for a bad time.
-- Unlike SQLite 3.40 a field out of its month ('2026-02-31') is written
-- normalised ('2026-03-03 00:00:00'); SQLite writes it back as given.
CREATE OR REPLACE FUNCTION datetime(value text, VARIADIC modifiers text[] DEFAULT '{}')
    RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
    RETURN memsdk_jd_format(memsdk_jd_modify(memsdk_jd_ms(value), modifiers),
                            'YYYY-MM-DD HH24:MI:SS');

-- strftime(format, time[, modifier...]) for %Y %m %d %H %M %S %f %j %s %J %w %%.
CREATE OR REPLACE FUNCTION strftime(format text, value text, VARIADIC modifiers text[] DEFAULT '{}')
    RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    ms bigint := memsdk_jd_modify(memsdk_jd_ms(value), modifiers);
    out text := '';
    i int := 1;
    ch text;
BEGIN
    IF ms IS NULL OR format IS NULL THEN
        RETURN NULL;
    END IF;
    WHILE i <= length(format) LOOP
        ch := substr(format, i, 1);
        IF ch <> '%' THEN
            out := out || ch;
        ELSE
            i := i + 1;
            ch := substr(format, i, 1);
            out := out || CASE ch
                WHEN 'Y' THEN memsdk_jd_format(ms, 'YYYY')
                WHEN 'm' THEN memsdk_jd_format(ms, 'MM')
                WHEN 'd' THEN memsdk_jd_format(ms, 'DD')
                WHEN 'H' THEN memsdk_jd_format(ms, 'HH24')
                WHEN 'M' THEN memsdk_jd_format(ms, 'MI')
                WHEN 'S' THEN memsdk_jd_format(ms, 'SS')
                WHEN 'f' THEN to_char((ms % 60000) / 1000.0, 'FM00.000')
                WHEN 'j' THEN memsdk_jd_format(ms, 'DDD')
                WHEN 's' THEN ((ms - 210866760000000) / 1000)::text
                WHEN 'J' THEN (ms / 86400000.0::double precision)::text
                WHEN 'w' THEN memsdk_jd_format(ms, 'D')::int - 1 || ''
                WHEN '%' THEN '%'
                ELSE NULL END;
            IF out IS NULL THEN
                RETURN NULL;  -- SQLite: an unknown conversion makes the result NULL
            END IF;
        END IF;
        i := i + 1;
    END LOOP;
    RETURN out;
END $$;

-- log2(x): SQLite's math function (grid/consolidation.py); PostgreSQL has log(b, x).
CREATE OR REPLACE FUNCTION log2(value double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT ln(value) / ln(2.0) $$;

-- round(x, digits) of a double: SQLite's; PostgreSQL rounds only numeric to digits
-- (the Retain Job's end state, retain/end_state.py, rounds impacts to 9 places).
CREATE OR REPLACE FUNCTION round(value double precision, digits integer) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT round(value::numeric, digits)::double precision $$;

-- SQLite reads a negative LIMIT as no limit; PostgreSQL refuses it. The dialect
-- (store/postgres/dialect.py) writes `LIMIT ?` as `LIMIT memsdk_limit(?)`:
-- NULL, PostgreSQL's "no limit", for a negative value.
CREATE OR REPLACE FUNCTION memsdk_limit(value bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN value < 0 THEN NULL ELSE value END $$;

-- substr with bigint positions: the store sends every integer as a bigint.
CREATE OR REPLACE FUNCTION substr(value text, start bigint, length bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT pg_catalog.substr(value, start::integer, length::integer) $$;
CREATE OR REPLACE FUNCTION substr(value text, start bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT pg_catalog.substr(value, start::integer) $$;
