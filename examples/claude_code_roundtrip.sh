#!/bin/sh
# The Claude Code round trip with a fake `claude` (it sleeps 3 s, then answers):
# install -> SessionStart -> UserPromptSubmit -> SessionEnd (returns at once)
# -> drain -> the drained memory in the next SessionStart.
# Run from a memsdk checkout: sh examples/claude_code_roundtrip.sh
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/.venv/bin"
T=$(mktemp -d /tmp/memsdk-roundtrip.XXXXXX)
mkdir -p "$T/bin" "$T/app" "$T/sessions"
cat > "$T/bin/claude" <<'FAKE'
#!/bin/sh
cat > /dev/null
sleep 3
printf '%s\n' '{"type":"result","is_error":false,"result":"<facts category=\"CONFIGURATION\">\n- The app reads its port from APP_PORT (default 8080).\n</facts>"}'
FAKE
chmod +x "$T/bin/claude"
export PATH="$T/bin:$BIN:$PATH" MEMSDK_USER_PATH="$T/user"
SESSION="$T/sessions/s1.jsonl"
printf '%s\n' \
  '{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-09-01T10:00:00Z","message":{"role":"user","content":"What port does the app use?"}}' \
  '{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2026-09-01T10:00:05Z","message":{"role":"assistant","content":[{"type":"text","text":"It reads APP_PORT, default 8080."}]}}' \
  > "$SESSION"
DB="$T/memory.db"
event() { printf '{"session_id":"s1","transcript_path":"%s","cwd":"%s","hook_event_name":"%s"%s}' "$SESSION" "$T/app" "$1" "${2:-}"; }
hook() { memsdk-hook claude-code "$1" --project app --db "$DB" --model claude-code; }

echo "\$ memsdk claude-code install --project-dir app --db memory.db --project app --yes"
memsdk claude-code install --project-dir "$T/app" --db "$DB" --project app --yes | grep -Ev '^([-+@]| [^ ])' || true
echo; echo "\$ SessionStart"; event SessionStart | hook SessionStart
echo; echo "\$ UserPromptSubmit 'which port?'"; event UserPromptSubmit ',"prompt":"which port does the app use?"' | hook UserPromptSubmit
echo; echo "\$ SessionEnd (timed)"
START=$(date +%s.%N); event SessionEnd ',"reason":"exit"' | hook SessionEnd
END=$(date +%s.%N); echo "SessionEnd returned in $(echo "$END - $START" | bc) s"
echo; echo "\$ memsdk claude-code status --project-dir app"; memsdk claude-code status --project-dir "$T/app"
echo; echo "(waiting for the detached drain, which the fake model keeps 3 s)"
i=0; while [ "$(sqlite3 "$DB" "select count(*) from hook_queue where done_at is null" 2>/dev/null || echo 1)" != 0 ] && [ $i -lt 60 ]; do sleep 1; i=$((i+1)); done
echo "\$ memsdk historian drain (again: nothing left)"; memsdk historian drain --db "$DB" --project app --model claude-code
echo; echo "\$ SessionStart (next session)"; event SessionStart | hook SessionStart | python3 -c 'import json,sys; print(json.load(sys.stdin)["hookSpecificOutput"]["additionalContext"])'
echo; echo "\$ UserPromptSubmit on topic: 'which port does the app listen on?'"
event UserPromptSubmit ',"prompt":"which port does the app listen on?"' | hook UserPromptSubmit; echo
echo; echo "\$ UserPromptSubmit off topic: 'Add a dark-mode toggle to the settings page'"
event UserPromptSubmit ',"prompt":"Add a dark-mode toggle to the settings page"' | hook UserPromptSubmit; echo
echo; echo "(files kept in $T)"
