"""The SQLite-to-PostgreSQL rewrites of ``store/postgres/dialect.py`` (no server needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugin_sdk.store.postgres.dialect import ArrayText, statement, translate


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = %s AND c = %s"),
        ("SELECT a FROM [my table] WHERE a == ?", 'SELECT a FROM "my table" WHERE a = %s'),
        ("SELECT positions[1] FROM t", "SELECT positions[1] FROM t"),
        ("SELECT 1 WHERE a LIKE 'x%' ESCAPE '\\'", "SELECT 1 WHERE a ILIKE 'x%%' ESCAPE '\\'"),
        ("SELECT 1 WHERE a NOT LIKE ?", "SELECT 1 WHERE a NOT ILIKE %s"),
        (
            "SELECT 1 WHERE a IS ? AND b IS NOT ?",
            "SELECT 1 WHERE a IS NOT DISTINCT FROM %s AND b IS DISTINCT FROM %s",
        ),
        (
            "SELECT 1 WHERE a IS NULL AND b IS NOT NULL",
            "SELECT 1 WHERE a IS NULL AND b IS NOT NULL",
        ),
        (
            "SELECT CAST(x AS REAL), CAST(y AS INTEGER)",
            "SELECT CAST(x AS double precision), CAST(y AS bigint)",
        ),
        (
            "INSERT OR IGNORE INTO t (a) VALUES (?)",
            "INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING",
        ),
        (
            "INSERT OR IGNORE INTO t (a) VALUES (?) RETURNING id",
            "INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING RETURNING id",
        ),
        ("SELECT id FROM temp.ids", "SELECT id FROM pg_temp.ids"),
        ("SELECT 9e999", "SELECT CAST('Infinity' AS double precision)"),
        ("SELECT a FROM t LIMIT ? OFFSET ?", "SELECT a FROM t LIMIT memsdk_limit(%s) OFFSET %s"),
        (
            "SELECT 1 WHERE (? IS NULL OR a = ?)",
            "SELECT 1 WHERE (CAST(%s AS text) IS NULL OR a = %s)",
        ),
        ("BEGIN IMMEDIATE TRANSACTION", "BEGIN TRANSACTION"),
        (
            "SELECT 1 FROM t WHERE +t.project = ? AND (+id > ?) AND a + b > 1",
            "SELECT 1 FROM t WHERE t.project = %s AND (id > %s) AND a + b > 1",
        ),
        (
            "SELECT max(id) FROM (SELECT id FROM t WHERE x = ')(' ORDER BY id LIMIT ?)",
            "SELECT max(id) FROM (SELECT id FROM t WHERE x = ')(' ORDER BY id "
            "LIMIT memsdk_limit(%s)) AS memsdk_sub1",
        ),
        (
            "SELECT a FROM (SELECT b FROM (SELECT c FROM t) WHERE 1) JOIN u ON 1",
            "SELECT a FROM (SELECT b FROM (SELECT c FROM t) AS memsdk_sub1 WHERE 1) "
            "AS memsdk_sub2 JOIN u ON 1",
        ),
        ("SELECT n FROM (SELECT 1 AS n) AS t", "SELECT n FROM (SELECT 1 AS n) AS t"),
        (
            "CREATE TEMP TABLE IF NOT EXISTS g (k TEXT PRIMARY KEY, h REAL, n INTEGER)",
            "CREATE TEMP TABLE IF NOT EXISTS g (k TEXT PRIMARY KEY, h double precision, n bigint)",
        ),
        ("SELECT n FROM (SELECT 1 AS n) t, u", "SELECT n FROM (SELECT 1 AS n) t, u"),
        ("SELECT 'it''s ? [x] LIKE'", "SELECT 'it''s ? [x] LIKE'"),
        (
            "INSERT INTO c (k) VALUES (?) ON CONFLICT (k) DO UPDATE SET r = nextval(s('c', 'r'))",
            "INSERT INTO c (k) VALUES (%s) ON CONFLICT (k) DO UPDATE SET r = nextval(s('c', 'r'))",
        ),
        (
            "INSERT INTO c (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = n + excluded.n",
            "INSERT INTO c (k, n) VALUES (%s, %s) ON CONFLICT (k) DO UPDATE SET n = c.n + excluded.n",
        ),
        (
            "INSERT INTO c (k, a, b) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET (a, b) = "
            "(excluded.a, excluded.b) WHERE (a, b) IS NOT (excluded.a, excluded.b)",
            "INSERT INTO c (k, a, b) VALUES (%s, %s, %s) ON CONFLICT (k) DO UPDATE SET (a, b) = "
            "(excluded.a, excluded.b) WHERE (c.a, c.b) IS DISTINCT FROM (excluded.a, excluded.b)",
        ),
    ],
)
def test_each_rewrite(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


def test_named_parameters_become_psycopg_names_only_for_a_mapping() -> None:
    assert translate("SELECT :a, x::text", named=True) == "SELECT %(a)s, x::text"
    assert translate("SELECT :a") == "SELECT :a"
    upsert = "INSERT INTO r (k, w) VALUES (:k, :w) ON CONFLICT (k) DO UPDATE SET w = CASE WHEN :given = 1 THEN excluded.w ELSE w END"
    assert translate(upsert, named=True).endswith(
        "SET w = CASE WHEN %(given)s = 1 THEN excluded.w ELSE r.w END"
    )


def test_a_json_list_parameter_becomes_a_typed_array() -> None:
    found = statement(
        "SELECT id FROM m WHERE p = ? AND id IN (SELECT value FROM json_each(?)) AND q = ?"
    )
    assert found.text == "SELECT id FROM m WHERE p = %s AND id = ANY(%s) AND q = %s"
    assert found.parameters(["x", '["a", "b"]', 7]) == ["x", ["a", "b"], 7]
    ids = found.parameters(["x", "[3, -1]", 7])[1]
    assert isinstance(ids, ArrayText) and ids == "{3, -1}"  # integers: the literal, no list


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1)))
def test_a_json_list_of_integers_is_its_array_literal(values: list[int]) -> None:
    literal = statement("SELECT 1 WHERE x IN (SELECT value FROM json_each(?))").parameters(
        [json.dumps(values)]
    )[0]
    assert isinstance(literal, ArrayText)
    inside = literal[1:-1].strip()
    assert ([int(v) for v in inside.split(",")] if inside else []) == values


@pytest.mark.parametrize("text", ["[1.5]", '["1"]', '["\\u0661"]', "[true]", "[1e3]"])
def test_other_json_lists_are_decoded_not_passed_as_text(text: str) -> None:
    value = statement("SELECT 1 WHERE x IN (SELECT value FROM json_each(?))").parameters([text])
    assert not isinstance(value[0], ArrayText) and value[0] == json.loads(text)


def test_select_star_hides_the_added_rowid_unless_named() -> None:
    assert statement("SELECT * FROM packs ORDER BY rowid").hides_rowid
    assert not statement("SELECT rowid, * FROM packs").hides_rowid
    assert not statement("SELECT name FROM packs").hides_rowid


@pytest.mark.parametrize(
    "sql", ["PRAGMA user_version", "INSERT OR REPLACE INTO t VALUES (1)", "SELECT ?1"]
)
def test_what_has_no_translation_is_refused_by_name(sql: str) -> None:
    with pytest.raises(ValueError, match=r"PostgreSQL|numbered"):
        translate(sql)


_WORD = st.text(
    alphabet=st.characters(categories=["L", "N"], max_codepoint=0x2FF), min_size=1, max_size=8
)


@given(st.lists(st.one_of(_WORD, st.just("?"), st.just("%"), st.just("'a?%'")), max_size=12))
def test_placeholders_are_counted_exactly_and_percent_signs_escaped(parts: list[str]) -> None:
    sql = "SELECT " + " , ".join(parts)
    out = translate(sql)
    bare = [p for p in parts if p == "?"]
    assert out.count("%s") == len(bare)
    assert "?" not in out.replace("'a?%%'", "")  # a ? only inside a literal
    assert out.replace("%%", "").replace("%s", "").count("%") == 0
