"""The store's schema, as named migrations.

Each step is a function ``mNNN_what`` registered on :data:`migrations`; it runs
once per store, inside one transaction, and is never edited or renamed after it
has landed: a change to the schema is a new step. The names of all steps this
code knows are in :data:`KNOWN`; a store that has applied a step not in that
list was written by a newer memsdk and is refused (see ``connection.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlite_utils import Database, Migrations

migrations = Migrations("plugin_sdk")
KNOWN: list[str] = []


def step(fn: Callable[[Database], None]) -> Callable[[Database], None]:
    """Register ``fn`` as the next migration, under its function name."""
    KNOWN.append(fn.__name__)
    return migrations(name=fn.__name__)(fn)


@step
def m001_initial(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE packs (
            name TEXT PRIMARY KEY,
            version TEXT NOT NULL,
            description TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            source TEXT NOT NULL,
            document TEXT NOT NULL,
            installed_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE categories (
            name TEXT PRIMARY KEY,
            pack TEXT NOT NULL REFERENCES packs(name),
            kind TEXT NOT NULL CHECK (kind IN ('content', 'intent')),
            priority INTEGER NOT NULL,
            promotable INTEGER NOT NULL DEFAULT 0 CHECK (promotable IN (0, 1)),
            label TEXT,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired')),
            renamed_to TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE criteria (
            category TEXT NOT NULL REFERENCES categories(name),
            field TEXT NOT NULL CHECK (field IN
                ('definition', 'positive_examples', 'negative_examples', 'exclusions')),
            pack_default TEXT NOT NULL,
            user_override TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (category, field)
        );

        CREATE TABLE criteria_history (
            id INTEGER PRIMARY KEY,
            category TEXT NOT NULL,
            field TEXT NOT NULL,
            source TEXT NOT NULL,
            pack TEXT,
            pack_version TEXT,
            old_value TEXT,
            new_value TEXT,
            note TEXT,
            at TEXT NOT NULL
        );
        CREATE INDEX criteria_history_category ON criteria_history (category, id);

        -- content comes last: SQLite reads a row's columns in order, and a
        -- long text spills to overflow pages that reads of later columns
        -- (status, counts) would otherwise have to walk.
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('content', 'intent')),
            category TEXT NOT NULL,
            normalized_hash TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN
                ('active', 'archived', 'superseded', 'pending', 'quarantined')),
            importance INTEGER NOT NULL DEFAULT 50 CHECK (importance BETWEEN 1 AND 100),
            scope TEXT NOT NULL DEFAULT 'project',
            shareable INTEGER NOT NULL DEFAULT 0 CHECK (shareable IN (0, 1)),
            superseded_by INTEGER REFERENCES memories(id),
            merged_from TEXT,
            seen_count INTEGER NOT NULL DEFAULT 1,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            token_count INTEGER,
            tokenizer TEXT,
            source TEXT NOT NULL DEFAULT '',
            note TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,
            last_retrieved_at TEXT,
            archived_at TEXT,
            pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
            content TEXT NOT NULL,
            UNIQUE (project, category, normalized_hash)
        );
        CREATE INDEX memories_project_status ON memories (project, status, category);
        CREATE INDEX memories_superseded_by ON memories (superseded_by);

        -- The DB, not the code, keeps a live memory in a live category. Only a
        -- quarantined row may carry a category the store does not know.
        CREATE TRIGGER memories_category_insert BEFORE INSERT ON memories
        WHEN NEW.status != 'quarantined' AND NOT EXISTS (
            SELECT 1 FROM categories WHERE name = NEW.category AND status = 'active')
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: category is not an active category of this store');
        END;
        CREATE TRIGGER memories_category_update BEFORE UPDATE OF category ON memories
        WHEN NEW.category != OLD.category AND NEW.status != 'quarantined' AND NOT EXISTS (
            SELECT 1 FROM categories WHERE name = NEW.category AND status = 'active')
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: category is not an active category of this store');
        END;

        CREATE TABLE session_meta (
            session_id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            system_prompt_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        -- Full-text index over content, kept in sync by triggers. The update
        -- trigger fires only when content changes, so bumping a seen count
        -- does not rewrite the index.
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', OLD.id, OLD.content);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content)
            VALUES ('delete', OLD.id, OLD.content);
            INSERT INTO memories_fts (rowid, content) VALUES (NEW.id, NEW.content);
        END;
        """
    )


@step
def m002_stages(db: Database) -> None:
    db.executescript(
        """
        -- The dreamer's place in each task's pass, per project, and its lease.
        CREATE TABLE dreamer_state (
            task TEXT NOT NULL,
            project TEXT NOT NULL,
            cursor TEXT,
            done INTEGER NOT NULL DEFAULT 0,
            passes INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'running', 'failed')),
            lease_owner TEXT,
            lease_until TEXT,
            started_at TEXT,
            updated_at TEXT,
            finished_at TEXT,
            last_error TEXT,
            PRIMARY KEY (task, project)
        );

        -- Changes that wait for a person (the approval queue builds on this).
        CREATE TABLE proposals (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            diff_type TEXT NOT NULL CHECK (diff_type IN
                ('claude_md', 'memory_entry', 'skill', 'allowlist')),
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                ('pending', 'approved', 'rejected', 'applied', 'failed')),
            rationale TEXT NOT NULL,
            evidence TEXT NOT NULL,
            diff TEXT NOT NULL,
            diff_hash TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX proposals_pending_once ON proposals (project, diff_type, diff_hash)
            WHERE status = 'pending';
        """
    )


@step
def m003_composites(db: Database) -> None:
    db.executescript(
        """
        -- Typed star groups: one head, ordered members (the seed's Proposal 2).
        CREATE TABLE composites (
            id INTEGER PRIMARY KEY,
            type TEXT NOT NULL CHECK (type IN ('sequence', 'theme', 'cause', 'alternatives')),
            head_memory_id INTEGER NOT NULL REFERENCES memories(id),
            cursor INTEGER NOT NULL DEFAULT 0,
            cyclic INTEGER NOT NULL DEFAULT 0 CHECK (cyclic IN (0, 1)),
            layout TEXT,
            stale_since TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX composites_head ON composites (head_memory_id);

        CREATE TABLE composite_members (
            composite_id INTEGER NOT NULL REFERENCES composites(id) ON DELETE CASCADE,
            member_memory_id INTEGER NOT NULL REFERENCES memories(id),
            position INTEGER NOT NULL,
            PRIMARY KEY (composite_id, member_memory_id)
        );
        CREATE INDEX composite_members_member ON composite_members (member_memory_id);

        -- The head is never a member of its own composite (breaks trivial cycles).
        CREATE TRIGGER composite_members_not_head BEFORE INSERT ON composite_members
        WHEN NEW.member_memory_id = (SELECT head_memory_id FROM composites WHERE id = NEW.composite_id)
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: a composite head cannot be its own member');
        END;
        CREATE TRIGGER composite_members_not_head_update BEFORE UPDATE OF member_memory_id
        ON composite_members
        WHEN NEW.member_memory_id = (SELECT head_memory_id FROM composites WHERE id = NEW.composite_id)
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: a composite head cannot be its own member');
        END;
        CREATE TRIGGER composites_head_not_member BEFORE UPDATE OF head_memory_id ON composites
        WHEN EXISTS (SELECT 1 FROM composite_members
                     WHERE composite_id = NEW.id AND member_memory_id = NEW.head_memory_id)
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: a composite head cannot be its own member');
        END;

        -- What happened to composites that a person could not otherwise see.
        CREATE TABLE composite_events (
            id INTEGER PRIMARY KEY,
            composite_id INTEGER NOT NULL,
            event TEXT NOT NULL,
            detail TEXT NOT NULL,
            at TEXT NOT NULL
        );
        CREATE INDEX composite_events_composite ON composite_events (composite_id, id);

        -- Frozen reference sets: a read-time snapshot of a composite.
        CREATE TABLE reference_sets (
            id INTEGER PRIMARY KEY,
            composite_id INTEGER NOT NULL,
            type TEXT NOT NULL,
            head_memory_id INTEGER NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE reference_set_items (
            set_id INTEGER NOT NULL REFERENCES reference_sets(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            memory_id INTEGER NOT NULL,
            normalized_hash TEXT NOT NULL,
            content TEXT NOT NULL,
            PRIMARY KEY (set_id, position)
        );
        """
    )


@step
def m004_injection(db: Database) -> None:
    db.executescript(
        """
        -- The injector reads its candidates from this index alone: the rows hold
        -- the text, and reading past it to later columns would be slow.
        CREATE INDEX memories_inject ON memories (
            project, status, pinned, kind, category, importance, seen_count, last_seen_at,
            token_count, tokenizer, normalized_hash
        );

        -- What each session was last shown, so the next injection can be a delta.
        CREATE TABLE injections (
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            budget INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            text_hash TEXT NOT NULL,
            shown TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, project)
        );
        """
    )


@step
def m005_grid(db: Database) -> None:
    db.executescript(
        """
        -- Durable graph nodes named namespace:slug, placed on the grid (seed 002).
        -- strength is the last value the consolidation pass computed (inf when pinned).
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            subtype TEXT,
            memory_type TEXT NOT NULL CHECK (memory_type IN ('episodic', 'semantic', 'procedural')),
            referent TEXT NOT NULL CHECK (referent IN ('self', 'agent', 'other', 'object', 'abstract')),
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'provisional', 'archived')),
            base_strength REAL NOT NULL DEFAULT 1.0 CHECK (base_strength > 0),
            pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
            positive_outcomes INTEGER NOT NULL DEFAULT 0 CHECK (positive_outcomes >= 0),
            negative_outcomes INTEGER NOT NULL DEFAULT 0 CHECK (negative_outcomes >= 0),
            retrieval_count INTEGER NOT NULL DEFAULT 0 CHECK (retrieval_count >= 0),
            emotional_tag TEXT,
            half_life_days REAL NOT NULL CHECK (half_life_days > 0),
            emotional_multiplier REAL NOT NULL CHECK (emotional_multiplier > 0),
            strength REAL,
            strength_at TEXT,
            cell_signal TEXT NOT NULL DEFAULT '',
            truth_id INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,
            last_retrieved_at TEXT,
            UNIQUE (project, name)
        );
        CREATE INDEX entities_cell ON entities (project, memory_type, referent);

        -- Which entities a memory is about or was said by (role: actor, subject).
        CREATE TABLE memory_entities (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('actor', 'subject')),
            PRIMARY KEY (memory_id, entity_id, role)
        );
        CREATE INDEX memory_entities_entity ON memory_entities (entity_id, role);

        -- Typed, weighted edges between entities; weight_temporal = exp(-days/sigma).
        CREATE TABLE relations (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0 CHECK (weight > 0),
            weight_temporal REAL NOT NULL DEFAULT 1.0,
            evidence_count INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,
            UNIQUE (project, source_id, target_id, type)
        );
        CREATE INDEX relations_target ON relations (target_id);

        -- A memory's place on the grid, its illocutionary act (interaction
        -- memories only) and its strength; a side table so the memories rows,
        -- and the injector's covering index, stay as they are.
        CREATE TABLE memory_cells (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            memory_type TEXT NOT NULL CHECK (memory_type IN ('episodic', 'semantic', 'procedural')),
            referent TEXT NOT NULL CHECK (referent IN ('self', 'agent', 'other', 'object', 'abstract')),
            act TEXT CHECK (act IN
                ('assertive', 'directive', 'commissive', 'expressive', 'declarative')),
            signal TEXT NOT NULL,
            strength REAL,
            strength_at TEXT
        );
        CREATE INDEX memory_cells_cell ON memory_cells (memory_type, referent);
        """
    )


@step
def m006_retain(db: Database) -> None:
    db.executescript(
        """
        -- Observations (seed 002's publish contract), keyed by their id in a project.
        -- status: queued -> retained | dark (held for review) -> retained | rejected;
        -- invalid: the store cannot take it (unknown category...), kept with the reason;
        -- failed: the Retain Job raised for it (error), nothing of it was written.
        CREATE TABLE observations (
            project TEXT NOT NULL,
            id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN
                ('queued', 'retained', 'dark', 'rejected', 'invalid', 'failed')),
            source TEXT NOT NULL,
            source_ref TEXT,
            timestamp TEXT NOT NULL,
            category TEXT NOT NULL,
            topic TEXT NOT NULL,
            sentiment TEXT NOT NULL,
            correlation TEXT,
            content_hash TEXT NOT NULL,
            schema_fit REAL CHECK (schema_fit BETWEEN 0 AND 1),
            route TEXT CHECK (route IN ('dark', 'normal', 'fast')),
            handler TEXT,
            memory_id INTEGER REFERENCES memories(id),
            duplicate INTEGER NOT NULL DEFAULT 0 CHECK (duplicate IN (0, 1)),
            half_life_days REAL,
            deferred TEXT,
            review TEXT CHECK (review IN ('accepted', 'rejected')),
            error TEXT,
            received_at TEXT NOT NULL,
            processed_at TEXT,
            reviewed_at TEXT,
            document TEXT NOT NULL,
            PRIMARY KEY (project, id)
        );
        CREATE INDEX observations_status ON observations (project, status);

        -- Which entities each observation was about; topic and category are copied
        -- here so schema_fit's familiarity checks are one indexed lookup. held = 1
        -- while the observation waits for review (it does not count yet).
        CREATE TABLE entity_observations (
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            project TEXT NOT NULL,
            observation_id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('actor', 'subject')),
            category TEXT NOT NULL,
            topic TEXT NOT NULL,
            at TEXT NOT NULL,
            created INTEGER NOT NULL DEFAULT 0 CHECK (created IN (0, 1)),
            held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
            PRIMARY KEY (entity_id, observation_id)
        );
        CREATE INDEX entity_observations_topic ON entity_observations (entity_id, topic, held);
        CREATE INDEX entity_observations_category ON entity_observations (entity_id, category, held);
        CREATE INDEX entity_observations_observation ON entity_observations (project, observation_id);

        -- Typed claims from observations: subject entity, predicate, object.
        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            predicate TEXT NOT NULL,
            object TEXT NOT NULL,
            object_norm TEXT NOT NULL,
            observation_id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'held', 'rejected')),
            at TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX facts_subject ON facts (entity_id, predicate, status);
        CREATE INDEX facts_observation ON facts (project, observation_id);

        -- Contradictions between facts: both are kept; a person resolves them.
        CREATE TABLE conflicts (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            predicate TEXT NOT NULL,
            fact_id INTEGER NOT NULL REFERENCES facts(id),
            other_fact_id INTEGER NOT NULL REFERENCES facts(id),
            pair TEXT NOT NULL,
            detail TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'dismissed')),
            resolution TEXT,
            created_at TEXT NOT NULL,
            resolved_at TEXT
        );
        CREATE INDEX conflicts_entity ON conflicts (entity_id, status);
        CREATE INDEX conflicts_project ON conflicts (project, status);
        CREATE UNIQUE INDEX conflicts_open_once ON conflicts (entity_id, kind, predicate, pair)
            WHERE status = 'open';

        -- Compiled Truth: per-entity markdown, versioned; a regeneration supersedes.
        CREATE TABLE compiled_truths (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            version INTEGER NOT NULL CHECK (version >= 1),
            markdown TEXT NOT NULL,
            written_by TEXT NOT NULL CHECK (written_by IN ('model', 'digest')),
            impact REAL NOT NULL,
            created_at TEXT NOT NULL,
            superseded_by INTEGER REFERENCES compiled_truths(id),
            UNIQUE (entity_id, version)
        );
        CREATE INDEX compiled_truths_entity ON compiled_truths (entity_id, superseded_by);

        -- Impact gathered per entity since its last Compiled Truth.
        CREATE TABLE truth_impacts (
            entity_id INTEGER PRIMARY KEY REFERENCES entities(id) ON DELETE CASCADE,
            project TEXT NOT NULL,
            impact REAL NOT NULL DEFAULT 0,
            observations INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX truth_impacts_due ON truth_impacts (project, impact);

        -- A memory's own half-life (schema_fit routing scales it); NULL: its cell's.
        ALTER TABLE memory_cells ADD COLUMN half_life_days REAL CHECK (half_life_days > 0);
        """
    )


@step
def m007_queue(db: Database) -> None:
    # A proposal can be undone: 'undone' joins the statuses. The CHECK lives in
    # the table's definition, so the table is rebuilt (SQLite's documented way),
    # keeping every column, row and index it has at this point.
    (sql,) = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'proposals'"
    ).fetchone()
    statuses = "'applied', 'failed')"
    if sql.count(statuses) != 1:
        raise RuntimeError("m007_queue: unexpected definition of the proposals table")
    indexes = [
        row[0]
        for row in db.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'proposals' "
            "AND type IN ('index', 'trigger') AND sql IS NOT NULL"
        ).fetchall()
    ]
    columns = ", ".join(f'"{row[1]}"' for row in db.execute("PRAGMA table_info(proposals)"))
    rebuilt = sql.replace(statuses, "'applied', 'failed', 'undone')").replace(
        "proposals", "proposals_m007", 1
    )
    db.execute(rebuilt)
    db.execute(f"INSERT INTO proposals_m007 ({columns}) SELECT {columns} FROM proposals")
    db.execute("DROP TABLE proposals")
    db.execute("ALTER TABLE proposals_m007 RENAME TO proposals")
    for statement in indexes:
        db.execute(statement)
    db.executescript(
        """
        -- Why the last apply failed (NULL unless status is 'failed').
        ALTER TABLE proposals ADD COLUMN error TEXT;
        CREATE INDEX proposals_status ON proposals (project, status, id);

        -- The queue's history: who did what to a proposal, and when.
        CREATE TABLE proposal_events (
            id INTEGER PRIMARY KEY,
            proposal_id INTEGER NOT NULL REFERENCES proposals(id),
            event TEXT NOT NULL CHECK (event IN
                ('filed', 'edited', 'approved', 'rejected', 'applied', 'failed', 'undone')),
            actor TEXT NOT NULL,
            detail TEXT NOT NULL,
            at TEXT NOT NULL
        );
        CREATE INDEX proposal_events_proposal ON proposal_events (proposal_id, id);

        -- What an applied proposal did, so it can be shown and undone: the store
        -- rows it changed (before and after) or the git branch it created.
        CREATE TABLE proposal_applications (
            proposal_id INTEGER PRIMARY KEY REFERENCES proposals(id),
            target TEXT NOT NULL CHECK (target IN ('store', 'git')),
            result TEXT NOT NULL,
            undo TEXT NOT NULL,
            applied_at TEXT NOT NULL,
            undone_at TEXT
        );
        """
    )


@step
def m008_transcript_ledger(db: Database) -> None:
    db.executescript(
        """
        -- What the historian was sent from each transcript file, per project,
        -- so a rerun sends only what is new (plugin_sdk/transcripts/ledger.py).
        CREATE TABLE transcript_imports (
            path TEXT NOT NULL,                       -- the file, as an absolute path
            project TEXT NOT NULL,
            format TEXT NOT NULL,
            offset_bytes INTEGER NOT NULL,            -- bytes read: the end of the last record read
            last_key TEXT NOT NULL DEFAULT '',        -- the last message's record id (a uuid, ...)
            content_hash TEXT NOT NULL,               -- SHA-256 of the bytes read
            cursors TEXT NOT NULL DEFAULT '{}',       -- JSON: conversation -> its last message's key
            messages INTEGER NOT NULL DEFAULT 0,      -- messages sent from this file, all runs
            imported_at TEXT NOT NULL,
            PRIMARY KEY (path, project)
        );
        """
    )


@step
def m009_design_mechanisms(db: Database) -> None:
    db.executescript(
        """
        -- Near-duplicate memories whose values differ (numbers, versions, hosts,
        -- dates): curate keeps both and records the conflict for a person, the
        -- way the Retain Job records contradicting facts.
        CREATE TABLE memory_conflicts (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            memory_id INTEGER NOT NULL REFERENCES memories(id),
            other_memory_id INTEGER NOT NULL REFERENCES memories(id),
            pair TEXT NOT NULL,
            detail TEXT NOT NULL,
            source TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'dismissed')),
            resolution TEXT,
            created_at TEXT NOT NULL,
            resolved_at TEXT
        );
        CREATE INDEX memory_conflicts_project ON memory_conflicts (project, status);
        CREATE UNIQUE INDEX memory_conflicts_open_once
            ON memory_conflicts (memory_id, other_memory_id) WHERE status = 'open';

        -- Reports that a memory helped or misled (memsdk outcome ID good|bad).
        CREATE TABLE memory_outcomes (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            memory_id INTEGER NOT NULL REFERENCES memories(id),
            good INTEGER NOT NULL CHECK (good IN (0, 1)),
            source TEXT NOT NULL,
            note TEXT,
            at TEXT NOT NULL
        );
        CREATE INDEX memory_outcomes_memory ON memory_outcomes (memory_id, id);

        -- Per-store overrides of grid values (a cell's half-life or emotional
        -- multiplier, an emotion, a relation type's sigma): they win over the
        -- packs until cleared, like criteria overrides.
        CREATE TABLE grid_overrides (
            key TEXT PRIMARY KEY,
            value REAL NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE grid_history (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL,
            source TEXT NOT NULL,
            old_value REAL,
            new_value REAL,
            note TEXT,
            at TEXT NOT NULL
        );
        CREATE INDEX grid_history_key ON grid_history (key, id);

        -- Entity names keep their case and compare case-insensitively.
        CREATE UNIQUE INDEX entities_name_nocase ON entities (project, name COLLATE NOCASE);
        """
    )
    # The subtype is the whole namespace path after the type (agent:claude-code:rc:X
    # is type agent, subtype claude-code:rc), no longer only the second segment.
    rows = db.execute("SELECT id, name FROM entities WHERE name LIKE '%:%:%:%'").fetchall()
    for entity_id, name in rows:
        db.execute(
            "UPDATE entities SET subtype = ? WHERE id = ?",
            [":".join(name.split(":")[1:-1]), entity_id],
        )


@step
def m010_walls_and_forget(db: Database) -> None:
    db.executescript(
        """
        -- Tombstones of forgotten memories: what was forgotten and when, never the
        -- text. The hash refuses the same text coming back (undone_at lifts it).
        -- The memory row stays (its id is referenced), archived, with its text
        -- emptied and its hash replaced by 'forgotten:<id>'.
        CREATE TABLE forgotten (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id),
            project TEXT NOT NULL,
            category TEXT NOT NULL,
            normalized_hash TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            forgotten_at TEXT NOT NULL,
            undone_at TEXT
        );
        CREATE INDEX forgotten_hash ON forgotten (project, normalized_hash)
            WHERE undone_at IS NULL;

        -- The memories every project may read (scope 'global' and shareable):
        -- search and injection add them to a project's own without a scan.
        CREATE INDEX memories_shared ON memories (status, project)
            WHERE scope = 'global' AND shareable = 1;
        """
    )


@step
def m011_browse_views(db: Database) -> None:
    # Views for people reading the store in Datasette or sqlite-utils: the
    # text first, ids turned into what they name, dates and the project
    # beside it. Nothing in memsdk reads them; plugin_sdk/host/
    # datasette-metadata.json labels them and points their search box at
    # memories_fts.
    db.executescript(
        """
        CREATE VIEW memories_view AS
        SELECT m.id, m.content, m.category, c.label AS category_label, m.kind, m.status,
               m.importance, m.pinned, m.project, m.created_at, m.updated_at,
               m.last_seen_at, m.seen_count, m.retrieval_count, m.superseded_by,
               s.content AS superseded_by_content, m.source, m.scope
        FROM memories m
        LEFT JOIN categories c ON c.name = m.category
        LEFT JOIN memories s ON s.id = m.superseded_by;

        CREATE VIEW composites_view AS
        SELECT c.id, h.content AS head, c.type, h.project,
               (SELECT count(*) FROM composite_members cm WHERE cm.composite_id = c.id)
                   AS members,
               c.stale_since, c.created_at, c.updated_at, c.head_memory_id
        FROM composites c JOIN memories h ON h.id = c.head_memory_id;

        CREATE VIEW composite_members_view AS
        SELECT cm.composite_id, cm.position, m.content AS member, h.content AS head,
               c.type, m.project, cm.member_memory_id, c.head_memory_id
        FROM composite_members cm
        JOIN composites c ON c.id = cm.composite_id
        JOIN memories m ON m.id = cm.member_memory_id
        JOIN memories h ON h.id = c.head_memory_id;

        CREATE VIEW entities_view AS
        SELECT e.id, e.name, e.type, e.subtype, e.memory_type || '.' || e.referent AS cell,
               e.status, e.project, e.strength,
               (SELECT count(*) FROM memory_entities me WHERE me.entity_id = e.id) AS memories,
               e.created_at, e.updated_at, e.last_seen_at
        FROM entities e;

        CREATE VIEW memory_entities_view AS
        SELECT m.content AS memory, e.name AS entity, me.role, m.category, m.project,
               me.memory_id, me.entity_id
        FROM memory_entities me
        JOIN memories m ON m.id = me.memory_id
        JOIN entities e ON e.id = me.entity_id;
        """
    )


@step
def m012_token_counts(db: Database) -> None:
    db.executescript(
        """
        -- Exact token counts of texts memsdk renders again and again (the
        -- injected block): a warm start reads the count instead of loading
        -- the tokenizer (store/tokens.py, count_cached). Bounded: the least
        -- recently used rows go.
        CREATE TABLE token_counts (
            text_hash TEXT NOT NULL,                  -- SHA-256 of the text
            tokenizer TEXT NOT NULL,                  -- the counter's name
            tokens INTEGER NOT NULL,
            used_at TEXT NOT NULL,
            PRIMARY KEY (text_hash, tokenizer)
        );
        """
    )


@step
def m013_search(db: Database) -> None:
    # The full-text index holds what a search can return, and nothing else:
    # live (active) memories only, with the project applied inside the MATCH
    # through an indexed ``fts_scope`` column (see ``search/engine.py``). The table
    # is rebuilt from scratch, so the old one and its triggers go first.
    db.executescript(
        """
        DROP TRIGGER IF EXISTS memories_fts_insert;
        DROP TRIGGER IF EXISTS memories_fts_delete;
        DROP TRIGGER IF EXISTS memories_fts_update;
        DROP TABLE IF EXISTS memories_fts;

        -- When the remembered thing happened (ISO 8601), as opposed to when it
        -- was written (created_at). NULL: not known.
        ALTER TABLE memories ADD COLUMN occurred_at TEXT;
        CREATE INDEX memories_occurred ON memories (project, occurred_at);

        -- The tokens a memory's index row carries for its readers: one per
        -- owner project ('p' + hex of the name) and 'shared' for a memory every
        -- project may read (scope 'global' and shareable, the cross-project rule).
        ALTER TABLE memories ADD COLUMN fts_scope TEXT GENERATED ALWAYS AS (
            'p' || hex(project) || CASE WHEN scope = 'global' AND shareable = 1
            THEN ' shared' ELSE '' END
        ) VIRTUAL;

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, fts_scope, content=[memories], content_rowid=[id],
            tokenize='porter unicode61'
        );

        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
        WHEN NEW.status = 'active' BEGIN
            INSERT INTO memories_fts (rowid, content, fts_scope)
            VALUES (NEW.id, NEW.content, NEW.fts_scope);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
        WHEN OLD.status = 'active' BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content, fts_scope)
            VALUES ('delete', OLD.id, OLD.content, OLD.fts_scope);
        END;
        -- One trigger, so the old row always leaves before the new one enters.
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF status, content, project, scope, shareable
        ON memories WHEN OLD.status = 'active' OR NEW.status = 'active' BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content, fts_scope)
            SELECT 'delete', OLD.id, OLD.content, OLD.fts_scope WHERE OLD.status = 'active';
            INSERT INTO memories_fts (rowid, content, fts_scope)
            SELECT NEW.id, NEW.content, NEW.fts_scope WHERE NEW.status = 'active';
        END;

        INSERT INTO memories_fts (rowid, content, fts_scope)
            SELECT id, content, fts_scope FROM memories WHERE status = 'active' ORDER BY id;

        -- Search and recall settings a store may change (ranking weights and
        -- the rest; see docs/search.md). A missing name means the default.
        CREATE TABLE search_settings (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        """
    )


@step
def m014_vectors(db: Database) -> None:
    # Vectors of memories, per embedding model (plugin_sdk/vectors, docs/vectors.md).
    # memory_vectors is the source of truth; a sqlite-vec table mirrors one
    # model's rows when the driver can load the extension (vector_state says
    # which), and vector_changes lists the ids whose mirror row is behind.
    db.executescript(
        """
        CREATE TABLE memory_vectors (
            id INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            dim INTEGER NOT NULL CHECK (dim > 0),
            vector BLOB NOT NULL CHECK (length(vector) = 4 * dim),  -- float32, unit length
            content_hash TEXT NOT NULL,  -- sha256 of the text embedded
            embedded_at TEXT NOT NULL,
            UNIQUE (model, memory_id)
        );
        CREATE INDEX memory_vectors_memory ON memory_vectors (memory_id);

        CREATE TABLE vector_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            model TEXT,            -- the model the last vectors were written with
            mirror_model TEXT,     -- the model memory_vectors_vec mirrors (NULL: no mirror)
            mirror_dim INTEGER,
            embed_on_write INTEGER NOT NULL DEFAULT 0 CHECK (embed_on_write IN (0, 1))
        );
        INSERT INTO vector_state (id) VALUES (1);

        CREATE TABLE vector_changes (memory_id INTEGER PRIMARY KEY);

        -- A memory's vector goes when its text changes or it stops being active
        -- (archived, superseded by a merge, quarantined, or forgotten).
        CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content, status ON memories
        WHEN NEW.status != 'active' OR OLD.content IS NOT NEW.content
        BEGIN
            DELETE FROM memory_vectors WHERE memory_id = NEW.id;
        END;

        CREATE TRIGGER memory_vectors_added AFTER INSERT ON memory_vectors
        WHEN NEW.model = (SELECT mirror_model FROM vector_state WHERE id = 1)
        BEGIN
            INSERT OR IGNORE INTO vector_changes (memory_id) VALUES (NEW.memory_id);
        END;
        CREATE TRIGGER memory_vectors_changed AFTER UPDATE ON memory_vectors
        WHEN (SELECT mirror_model FROM vector_state WHERE id = 1) IN (OLD.model, NEW.model)
        BEGIN
            INSERT OR IGNORE INTO vector_changes (memory_id) VALUES (OLD.memory_id);
            INSERT OR IGNORE INTO vector_changes (memory_id) VALUES (NEW.memory_id);
        END;
        CREATE TRIGGER memory_vectors_removed AFTER DELETE ON memory_vectors
        WHEN OLD.model = (SELECT mirror_model FROM vector_state WHERE id = 1)
        BEGIN
            INSERT OR IGNORE INTO vector_changes (memory_id) VALUES (OLD.memory_id);
        END;
        """
    )


# What the injector ranks, kept current by triggers (issue 15): a row per
# active memory it may show, with the tier that decides its place. The tier
# of a memory:
#   0  pinned
#   1  heads a sequence or theme and belongs to no theme (a top-level header)
#   2  standalone: heads nothing the block expands and belongs to no theme
#   3  member of a theme (one expand of its theme header reaches it)
#   -  no row: a detail of a sequence whose head is active, or a theme head
#      inside another theme (its parent's expand reaches it)
_TOC_TIER = """
CASE
    WHEN m.pinned = 1 THEN 0
    WHEN EXISTS (SELECT 1 FROM composite_members d JOIN composites s ON s.id = d.composite_id
                 JOIN memories h ON h.id = s.head_memory_id
                 WHERE d.member_memory_id = m.id AND s.type = 'sequence' AND h.status = 'active')
        THEN NULL
    WHEN EXISTS (SELECT 1 FROM composite_members d JOIN composites s ON s.id = d.composite_id
                 JOIN memories h ON h.id = s.head_memory_id
                 WHERE d.member_memory_id = m.id AND s.type = 'theme' AND h.status = 'active')
        THEN CASE WHEN EXISTS (SELECT 1 FROM composites t
                               WHERE t.head_memory_id = m.id AND t.type = 'theme')
                  THEN NULL ELSE 3 END
    WHEN EXISTS (SELECT 1 FROM composites t
                 WHERE t.head_memory_id = m.id AND t.type IN ('sequence', 'theme'))
        THEN 1
    ELSE 2
END"""


# Frozen with m015: never edited. The live annotation SQL the read path runs is
# plugin_sdk/store/tables/composites/toc.py's; a change to it is a new migration.
# What one expand of a memory shows, as the block writes it inside the id
# bracket: per composite it heads with active members, in type order,
# "9 details", "12 groups, 480 memories" (a group of the map: its sizes as
# the map task recorded them), "3 causes", "4 alternatives"; NULL for none.
_M015_NOTE = """(SELECT group_concat(words, '; ') FROM (
    SELECT CASE
        WHEN json_extract(c.layout, '$.map.groups') > 0
            THEN json_extract(c.layout, '$.map.groups') || ' groups, '
                 || json_extract(c.layout, '$.map.memories') || ' memories'
        WHEN json_extract(c.layout, '$.map.memories') IS NOT NULL
            THEN json_extract(c.layout, '$.map.memories')
                 || CASE json_extract(c.layout, '$.map.memories') WHEN 1 THEN ' memory'
                    ELSE ' memories' END
        ELSE c.n || ' ' || CASE c.type
            WHEN 'sequence' THEN CASE c.n WHEN 1 THEN 'detail' ELSE 'details' END
            WHEN 'theme' THEN CASE c.n WHEN 1 THEN 'memory' ELSE 'memories' END
            WHEN 'cause' THEN CASE c.n WHEN 1 THEN 'cause' ELSE 'causes' END
            ELSE CASE c.n WHEN 1 THEN 'alternative' ELSE 'alternatives' END END
    END AS words
    FROM (SELECT t.id, t.type, t.layout,
                 (SELECT count(*) FROM composite_members d JOIN memories x
                  ON x.id = d.member_memory_id AND x.status = 'active'
                  WHERE d.composite_id = t.id) AS n
          FROM composites t WHERE t.head_memory_id = {head}) AS c
    WHERE c.n > 0
    ORDER BY CASE c.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1 WHEN 'cause' THEN 2
             ELSE 3 END, c.id))"""
_M015_HEAD = """(SELECT t.type FROM composites t WHERE t.head_memory_id = {head}
    AND EXISTS (SELECT 1 FROM composite_members d JOIN memories x
                ON x.id = d.member_memory_id AND x.status = 'active' WHERE d.composite_id = t.id)
    ORDER BY CASE t.type WHEN 'sequence' THEN 0 WHEN 'theme' THEN 1 WHEN 'cause' THEN 2
             ELSE 3 END, t.id LIMIT 1)"""


def _toc_refresh(ids: str) -> str:
    """SQL that recomputes the ranking rows of the memories ``ids`` selects."""
    return f"""
        DELETE FROM toc_rank WHERE memory_id IN ({ids});
        INSERT INTO toc_rank SELECT * FROM toc_rank_source
            WHERE memory_id IN ({ids}) AND tier IS NOT NULL;"""


@step
def m015_toc_rank(db: Database) -> None:
    members_of_head = """SELECT d.member_memory_id FROM composite_members d
        JOIN composites c ON c.id = d.composite_id WHERE c.head_memory_id = {head}"""
    heads_of_member = """SELECT c.head_memory_id FROM composites c
        JOIN composite_members d ON d.composite_id = c.id WHERE d.member_memory_id = {member}"""
    head_of = "SELECT head_memory_id FROM composites WHERE id = {composite}"
    db.executescript(
        f"""
        CREATE TABLE toc_rank (
            memory_id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            category TEXT NOT NULL,
            kind TEXT NOT NULL,
            tier INTEGER NOT NULL,
            importance INTEGER NOT NULL,
            strength REAL NOT NULL,
            seen_count INTEGER NOT NULL,
            last_seen_at TEXT NOT NULL,
            token_count INTEGER,
            tokenizer TEXT,
            head TEXT,
            note TEXT,
            shared INTEGER NOT NULL
        );
        -- One tier of one category, in rank order, read from the index alone.
        CREATE INDEX toc_rank_order ON toc_rank (
            project, tier, category, importance DESC, strength DESC, seen_count DESC,
            last_seen_at DESC, memory_id, kind, token_count, tokenizer, head, note
        );
        -- Memories every project may read (scope 'global' and shareable), the same way.
        CREATE INDEX toc_rank_shared ON toc_rank (
            tier, category, importance DESC, strength DESC, seen_count DESC, last_seen_at DESC,
            memory_id, project, kind, token_count, tokenizer, head, note
        ) WHERE shared = 1;
        CREATE VIEW toc_rank_source AS
            SELECT m.id AS memory_id, m.project, m.category, m.kind, {_TOC_TIER} AS tier,
                   m.importance, coalesce(g.strength, -1.0) AS strength, m.seen_count,
                   m.last_seen_at, m.token_count, m.tokenizer, {_M015_HEAD.format(head="m.id")} AS head,
                   {_M015_NOTE.format(head="m.id")} AS note,
                   (m.scope = 'global' AND m.shareable = 1) AS shared
            FROM memories m LEFT JOIN memory_cells g ON g.memory_id = m.id
            WHERE m.status = 'active';

        CREATE TRIGGER toc_memory_insert AFTER INSERT ON memories BEGIN
            {_toc_refresh("NEW.id")}
        END;
        CREATE TRIGGER toc_memory_update AFTER UPDATE OF
            status, pinned, importance, seen_count, last_seen_at, token_count, tokenizer,
            category, kind, project, scope, shareable ON memories BEGIN
            {_toc_refresh("NEW.id")}
        END;
        CREATE TRIGGER toc_memory_status AFTER UPDATE OF status ON memories
        WHEN OLD.status != NEW.status BEGIN
            {_toc_refresh(members_of_head.format(head="NEW.id"))}
            {_toc_refresh(heads_of_member.format(member="NEW.id"))}
        END;
        CREATE TRIGGER toc_memory_delete AFTER DELETE ON memories BEGIN
            DELETE FROM toc_rank WHERE memory_id = OLD.id;
        END;

        CREATE TRIGGER toc_composite_insert AFTER INSERT ON composites BEGIN
            {_toc_refresh("NEW.head_memory_id")}
        END;
        CREATE TRIGGER toc_composite_layout AFTER UPDATE OF layout ON composites BEGIN
            {_toc_refresh("NEW.head_memory_id")}
        END;
        CREATE TRIGGER toc_composite_update AFTER UPDATE OF head_memory_id, type ON composites BEGIN
            {_toc_refresh("OLD.head_memory_id, NEW.head_memory_id")}
            {_toc_refresh("SELECT member_memory_id FROM composite_members WHERE composite_id = NEW.id")}
        END;
        CREATE TRIGGER toc_composite_delete AFTER DELETE ON composites BEGIN
            {_toc_refresh("OLD.head_memory_id")}
        END;
        CREATE TRIGGER toc_member_insert AFTER INSERT ON composite_members BEGIN
            {_toc_refresh("NEW.member_memory_id")}
            {_toc_refresh(head_of.format(composite="NEW.composite_id"))}
        END;
        CREATE TRIGGER toc_member_delete AFTER DELETE ON composite_members BEGIN
            {_toc_refresh("OLD.member_memory_id")}
            {_toc_refresh(head_of.format(composite="OLD.composite_id"))}
        END;
        CREATE TRIGGER toc_member_update AFTER UPDATE OF member_memory_id, composite_id
        ON composite_members BEGIN
            {_toc_refresh("OLD.member_memory_id, NEW.member_memory_id")}
            {_toc_refresh(head_of.format(composite="OLD.composite_id"))}
            {_toc_refresh(head_of.format(composite="NEW.composite_id"))}
        END;

        CREATE TRIGGER toc_cell_insert AFTER INSERT ON memory_cells BEGIN
            UPDATE toc_rank SET strength = coalesce(NEW.strength, -1.0)
            WHERE memory_id = NEW.memory_id;
        END;
        CREATE TRIGGER toc_cell_update AFTER UPDATE OF strength ON memory_cells BEGIN
            UPDATE toc_rank SET strength = coalesce(NEW.strength, -1.0)
            WHERE memory_id = NEW.memory_id;
        END;
        CREATE TRIGGER toc_cell_delete AFTER DELETE ON memory_cells BEGIN
            UPDATE toc_rank SET strength = -1.0 WHERE memory_id = OLD.memory_id;
        END;

        INSERT INTO toc_rank SELECT * FROM toc_rank_source WHERE tier IS NOT NULL;

        -- The injector no longer reads the memories table for its candidates.
        DROP INDEX IF EXISTS memories_inject;
        """
    )


@step
def m016_insert_triggers_paused(db: Database) -> None:
    # ``write_many`` does the work of the two per-row insert triggers itself,
    # one statement per batch (see ``store/writing/bulk.py``): feeding the
    # full-text index and the table of contents' ranking rows once per batch
    # was measured faster than the triggers firing once per row. While
    # ``insert_triggers_paused`` holds a row those triggers leave their work to
    # that writer. The row is added and removed inside the writer's own
    # transaction, so no other connection ever sees it, and every other writer
    # keeps the triggers as they were (the bodies are unchanged).
    db.executescript(
        f"""
        CREATE TABLE insert_triggers_paused (
            id INTEGER PRIMARY KEY CHECK (id = 1)
        );
        DROP TRIGGER memories_fts_insert;
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
        WHEN NEW.status = 'active' AND NOT EXISTS (SELECT 1 FROM insert_triggers_paused) BEGIN
            INSERT INTO memories_fts (rowid, content, fts_scope)
            VALUES (NEW.id, NEW.content, NEW.fts_scope);
        END;
        DROP TRIGGER toc_memory_insert;
        CREATE TRIGGER toc_memory_insert AFTER INSERT ON memories
        WHEN NOT EXISTS (SELECT 1 FROM insert_triggers_paused) BEGIN
            {_toc_refresh("NEW.id")}
        END;
        """
    )


@step
def m017_retain_indexes(db: Database) -> None:
    db.executescript(
        """
        -- The Retain Job reads an entity's latest memories (the dedup pass) and
        -- its latest observations (the Compiled Truth digest): walk them newest
        -- first instead of sorting all of a hot entity's rows.
        CREATE INDEX memory_entities_latest ON memory_entities (entity_id, memory_id);
        CREATE INDEX entity_observations_latest ON entity_observations (entity_id, at, observation_id);
        """
    )


@step
def m018_hook_queue(db: Database) -> None:
    db.executescript(
        """
        -- What a host's hook left for the historian (plugin_sdk/host/hook_queue.py):
        -- SessionEnd and PreCompact record the files and return; `memsdk
        -- historian drain` reads them later. The import ledger knows what was sent.
        CREATE TABLE hook_queue (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            event TEXT NOT NULL,
            files TEXT NOT NULL,                 -- JSON: [{"path", "size"}], session then sub-agents
            queued_at TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            done_at TEXT,
            summary TEXT
        );
        CREATE INDEX hook_queue_todo ON hook_queue (project, done_at, id);
        -- When each hook (and the drain) last ran per project, and its last error.
        CREATE TABLE hook_runs (
            project TEXT NOT NULL,
            event TEXT NOT NULL,
            runs INTEGER NOT NULL DEFAULT 0,
            last_run_at TEXT NOT NULL,
            last_ok_at TEXT,
            last_error TEXT,
            last_error_at TEXT,
            PRIMARY KEY (project, event)
        );
        -- A notice a hook showed a session (systemMessage), so it says it once.
        CREATE TABLE hook_notices (
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            notice TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (session_id, project, notice)
        );
        """
    )


@step
def m019_closed_status(db: Database) -> None:
    db.executescript(
        """
        -- A memory becomes live (active or pending) only in an active category:
        -- leaving quarantine or being restored from the archive by a status
        -- change alone is checked too (memories_category_update fires only on
        -- a category change). Archiving or quarantining is always allowed.
        CREATE TRIGGER memories_category_status BEFORE UPDATE OF status ON memories
        WHEN NEW.status IN ('active', 'pending') AND OLD.status NOT IN ('active', 'pending')
            AND NOT EXISTS (
                SELECT 1 FROM categories WHERE name = NEW.category AND status = 'active')
        BEGIN
            SELECT RAISE(ABORT, 'memsdk: category is not an active category of this store');
        END;
        """
    )


@step
def m020_read_records(db: Database) -> None:
    # What reads recorded late or lost (``store/writing/pending.py``): one row per
    # kind of record, counted for ``memsdk doctor``.
    db.executescript(
        """
        CREATE TABLE read_records (
            what TEXT PRIMARY KEY,
            deferred INTEGER NOT NULL DEFAULT 0,
            dropped INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        );
        """
    )


@step
def m022_write_batches(db: Database) -> None:
    db.executescript(
        """
        -- Sequence context without timestamps (docs/search.md, "Neighbours"):
        -- the rows one write_many call created share a batch label (the first
        -- id the batch took), so search knows which memories were written
        -- together, in their order, even when no occurred_at is known.
        ALTER TABLE memories ADD COLUMN batch INTEGER;
        CREATE INDEX memories_batch ON memories (batch) WHERE batch IS NOT NULL;
        -- Existing rows: write_many gives one timestamp to a whole call, so
        -- rows of one project and source created at the same instant were
        -- written together. Groups of one stay unlabelled.
        CREATE TEMP TABLE m022_groups AS
            SELECT project, source, created_at, min(id) AS first FROM memories
            GROUP BY project, source, created_at HAVING count(*) > 1;
        CREATE INDEX temp.m022_groups_key ON m022_groups (project, source, created_at);
        UPDATE memories SET batch = (
            SELECT g.first FROM m022_groups g WHERE g.project = memories.project
              AND g.source = memories.source AND g.created_at = memories.created_at)
        WHERE EXISTS (
            SELECT 1 FROM m022_groups g WHERE g.project = memories.project
              AND g.source = memories.source AND g.created_at = memories.created_at);
        DROP TABLE m022_groups;
        """
    )


@step
def m025_observation_retention(db: Database) -> None:
    db.executescript(
        """
        -- Retention (docs/retain.md, "Retention"): the store's retention in days
        -- (one row; absent: the documented default), and a tombstone per pruned
        -- observation, so a replay of its line stays a replay and the ids that
        -- facts, conflicts and Compiled Truth name stay known. No text.
        CREATE TABLE observation_retention (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            keep_days INTEGER NOT NULL CHECK (keep_days >= 1),
            updated_at TEXT NOT NULL
        );
        CREATE TABLE observation_tombstones (
            project TEXT NOT NULL,
            id TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            received_at TEXT NOT NULL,
            pruned_at TEXT NOT NULL,
            PRIMARY KEY (project, id)
        );
        """
    )


@step
def m026_neardup_index(db: Database) -> None:
    db.executescript(
        """
        -- Curate's candidate index (docs/composites.md, "Near-duplicates"):
        -- MinHash bands over each memory's word set, one row per band, the
        -- bucket a 63-bit hash of (project, category, band, the band's
        -- minimums); size is the word-set size (a Jaccard of 0.8 needs sizes
        -- within 0.8x..1.25x). Integers only: no stored text.
        CREATE TABLE neardup_bands (
            bucket INTEGER NOT NULL,
            memory_id INTEGER NOT NULL,
            size INTEGER NOT NULL,
            PRIMARY KEY (bucket, memory_id)
        ) WITHOUT ROWID;
        CREATE INDEX neardup_bands_memory ON neardup_bands (memory_id);
        -- Memories written or changed since their bands were last computed:
        -- filled by triggers as memories are written, emptied by curate.
        CREATE TABLE neardup_dirty (memory_id INTEGER PRIMARY KEY);
        CREATE TRIGGER neardup_insert AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO neardup_dirty (memory_id) VALUES (NEW.id);
        END;
        CREATE TRIGGER neardup_update AFTER UPDATE OF content, category, status, project
            ON memories BEGIN
            INSERT OR IGNORE INTO neardup_dirty (memory_id) VALUES (NEW.id);
        END;
        CREATE TRIGGER neardup_delete AFTER DELETE ON memories BEGIN
            DELETE FROM neardup_bands WHERE memory_id = OLD.id;
            DELETE FROM neardup_dirty WHERE memory_id = OLD.id;
        END;
        INSERT INTO neardup_dirty (memory_id) SELECT id FROM memories;
        """
    )


@step
def m027_memories_in_id_order(db: Database) -> None:
    db.executescript(
        """
        -- A pass over a project's memories in batches (the dreamer's tasks:
        -- project, status, id > cursor, ORDER BY id LIMIT n) seeks its next
        -- batch here and stops; through memories_project_status it read and
        -- sorted every later row for each batch (quadratic over a pass).
        CREATE INDEX memories_project_status_id ON memories (project, status, id);
        """
    )


@step
def m028_search_terms(db: Database) -> None:
    """PostgreSQL only: each word's count of live memories (``search_terms``).

    FTS5 answers "how many live memories hold this word" from its index; a GIN
    index cannot without reading every row. PostgreSQL's form
    (``postgres/schema.py``) adds the table and the statement triggers that
    keep it; SQLite has nothing to add, and records the step.
    """
    db.executescript(
        """
        -- Nothing changes on SQLite: FTS5 counts a word's rows from its index.
        -- On PostgreSQL (postgres/schema.py STEPS, schema/postgres_terms.sql)
        -- search_terms holds each word's count, kept by statement triggers.
        """
    )


@step
def m029_postgres_write_path(db: Database) -> None:
    db.executescript(
        """
        -- Nothing changes on SQLite. On PostgreSQL (postgres/schema.py STEPS) the
        -- full-text columns are set from one pass over the text by a row trigger,
        -- not recomputed on every update, and the TOC refresh after an update is
        -- once a statement; SQLite's FTS5 and row triggers stay as they are.
        """
    )


@step
def m030_toc_triggers_per_statement(db: Database) -> None:
    db.executescript(
        """
        -- PostgreSQL only (postgres/schema.py STEPS, schema/postgres_toc_statements.sql):
        -- its table-of-contents triggers on composites and composite_members
        -- run once a statement, and rank with a plan made once. SQLite's
        -- triggers run statements it compiled once; nothing changes here.
        """
    )


@step
def m031_search_postings(db: Database) -> None:
    db.executescript(
        """
        -- PostgreSQL only (postgres/schema.py STEPS, schema/postgres_postings.sql):
        -- search_postings, each live memory's lexemes with their counts, the
        -- memory's length and its read rule, kept by statement triggers, so that
        -- search reads a word's rows from one index. FTS5 is that index on SQLite.
        """
    )
