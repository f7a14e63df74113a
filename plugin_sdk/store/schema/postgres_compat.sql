CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE OR REPLACE FUNCTION json_extract(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT ($1::jsonb #>> string_to_array(regexp_replace(regexp_replace($2, '^\$\.?', ''), '\[(\d+)\]', '.\1', 'g'), '.')) $$;
CREATE OR REPLACE FUNCTION julianday(text) RETURNS double precision LANGUAGE sql STABLE AS $$ SELECT extract(epoch FROM (CASE WHEN $1 = 'now' THEN now() ELSE $1::timestamptz END)) / 86400.0 + 2440587.5 $$;
CREATE OR REPLACE FUNCTION max(double precision, double precision) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE greatest($1, $2) END $$;
CREATE OR REPLACE FUNCTION min(double precision, double precision) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE least($1, $2) END $$;
CREATE OR REPLACE FUNCTION max(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE greatest($1, $2) END $$;
CREATE OR REPLACE FUNCTION min(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE least($1, $2) END $$;
CREATE OR REPLACE FUNCTION max(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE greatest($1, $2) END $$;
CREATE OR REPLACE FUNCTION min(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL ELSE least($1, $2) END $$;
CREATE OR REPLACE FUNCTION json_each(text) RETURNS TABLE(key text, value text, type text) LANGUAGE sql IMMUTABLE AS $$
  SELECT (ord - 1)::text, e, jsonb_typeof(e2) FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS t(e, ord), LATERAL (SELECT ($1::jsonb)->(ord::int - 1)) AS x(e2) WHERE jsonb_typeof($1::jsonb) = 'array'
  UNION ALL SELECT k, v #>> '{}', jsonb_typeof(v) FROM jsonb_each($1::jsonb) AS o(k, v) WHERE jsonb_typeof($1::jsonb) = 'object' $$;
CREATE OR REPLACE FUNCTION log2(double precision) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT log(2.0, $1::numeric)::double precision $$;
CREATE OR REPLACE FUNCTION instr(text, text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT strpos($1, $2)::bigint $$;
CREATE OR REPLACE FUNCTION hex(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT upper(encode(convert_to($1, 'UTF8'), 'hex')) $$;
CREATE OR REPLACE FUNCTION total_sfunc(double precision, double precision) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT $1 + coalesce($2, 0) $$;
CREATE OR REPLACE AGGREGATE total(double precision) (SFUNC = total_sfunc, STYPE = double precision, INITCOND = '0');
