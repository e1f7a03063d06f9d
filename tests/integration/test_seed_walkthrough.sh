#!/usr/bin/env bash
# Runs two of Consul's leader-election walkthroughs (the documents this project started
# from, hence "seed" in the file's name), command for command, with curl and jq against a
# fresh `tenure server -dev`:
#   the guide: Consul's guide "Leader Election"
#   the page:  Consul's documentation page "Application leader election"
# Only host:port, session ids, keys' placeholders and indexes are substituted; every command
# is printed before it runs, followed by its output, so a reader can lay it next to the document.
# Expected answers come from the documents and docs/consul-api.md (sections cited).
# Exits non-zero at the first mismatch.
#
# Usage: TENURE_BIN=/path/to/tenure bash tests/integration/test_seed_walkthrough.sh
#
# Commands and jq filters are deliberately single-quoted: they are printed as the document shows
# them and expanded only when run (jq gets its variables with --arg).
# shellcheck disable=SC2016
set -euo pipefail

BIN=${TENURE_BIN:-}
[[ -n $BIN && -x $BIN ]] || { echo "FAIL: TENURE_BIN must name the tenure binary" >&2; exit 2; }
command -v jq >/dev/null || { echo "FAIL: jq is required" >&2; exit 2; }
command -v curl >/dev/null || { echo "FAIL: curl is required" >&2; exit 2; }

CMD_TIMEOUT_S=10     # any single foreground command
START_TIMEOUT_S=15   # server start until a leader is known
STILL_BLOCKED_S=1    # a blocking query must still be waiting this long after it starts
WAKE_DEADLINE_S=5    # and must answer within this long after the change

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tenure-seed-walkthrough.XXXXXX")
SERVER_PID=""
BG_PID=""

stop_bg() {
  if [[ -n $BG_PID ]]; then
    pkill -TERM -P "$BG_PID" 2>/dev/null || true   # children of our own subshell only
    kill -TERM "$BG_PID" 2>/dev/null || true
    wait "$BG_PID" 2>/dev/null || true
    BG_PID=""
  fi
}

cleanup() {
  local rc=$?
  stop_bg
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -f $WORK/server.log ]]; then
    echo "--- server log (last 30 lines) ---" >&2
    tail -n 30 "$WORK/server.log" >&2
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }
section() { printf '\n==================== %s\n' "$*"; }
step() { printf '\n--- %s\n' "$*"; }

# Replaces the document's host:port with ours; @NAME@ placeholders with the values given.
subst() {
  local text=$1; shift
  text=${text//localhost:8500/localhost:$PORT}
  text=${text//127.0.0.1:8500/127.0.0.1:$PORT}
  while (($#)); do text=${text//"@$1@"/$2}; shift 2; done
  printf '%s' "$text"
}

# run TEMPLATE [NAME VALUE]...: prints the command and runs it (bounded); output in $OUT.
run() {
  local cmd
  cmd=$(subst "$@")
  printf '$ %s\n' "$cmd"
  if ! OUT=$(timeout "$CMD_TIMEOUT_S" bash -c "$cmd" 2>"$WORK/stderr"); then
    cat "$WORK/stderr" >&2
    fail "command failed or took more than ${CMD_TIMEOUT_S}s: $cmd"
  fi
  printf '%s\n' "$OUT"
}

# expect JSON DESCRIPTION JQ-FILTER [jq args...]: the filter must yield true on JSON.
expect() {
  local json=$1 what=$2 filter=$3; shift 3
  if ! jq -e "$@" "$filter" >/dev/null 2>"$WORK/jqerr" <<<"$json"; then
    fail "$what
  check: $filter
  got:   $json $(cat "$WORK/jqerr")"
  fi
  printf 'ok: %s\n' "$what"
}

# start_blocking TEMPLATE [NAME VALUE]...: runs a blocking query in the background.
start_blocking() {
  local cmd
  cmd=$(subst "$@")
  printf '$ %s &    # in the background\n' "$cmd"
  bash -c "$cmd" >"$WORK/blocking.out" 2>"$WORK/blocking.err" &
  BG_PID=$!
  local deadline=$((SECONDS + STILL_BLOCKED_S + 1)) t0
  t0=$(date +%s.%N)
  while kill -0 "$BG_PID" 2>/dev/null; do
    if awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$STILL_BLOCKED_S" 'BEGIN{exit !(b-a>=s)}'; then
      printf 'ok: still blocked after %ss (no change made yet)\n' "$STILL_BLOCKED_S"
      return 0
    fi
    ((SECONDS < deadline)) || break
    sleep 0.1
  done
  fail "the blocking query returned before any change was made: $(cat "$WORK/blocking.out")"
}

# await_blocking: the background query must finish within WAKE_DEADLINE_S; output in $OUT.
await_blocking() {
  local polls=$((WAKE_DEADLINE_S * 10))
  while kill -0 "$BG_PID" 2>/dev/null && ((polls-- > 0)); do sleep 0.1; done
  if kill -0 "$BG_PID" 2>/dev/null; then
    fail "the blocking query was not woken within ${WAKE_DEADLINE_S}s of the change"
  fi
  local rc=0
  wait "$BG_PID" || rc=$?
  BG_PID=""
  ((rc == 0)) || fail "the blocking query failed (exit $rc): $(cat "$WORK/blocking.err")"
  OUT=$(cat "$WORK/blocking.out")
  printf '(background query answered after the change)\n%s\n' "$OUT"
}

b64() { printf '%s' "$1" | base64 -w0; }
UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'

# ---------------------------------------------------------------------------------------
section "setup: tenure server -dev on free ports"
# Another test may take a port between our pick and the server's bind: then
# the server says "Address already in use" and we pick again (5 attempts).
for ((attempt = 1; ; attempt++)); do
  read -r PORT RAFT_PORT < <(
    "$(command -v python3 || echo /usr/bin/python3)" -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
  echo "$BIN server -dev -http-addr 127.0.0.1:$PORT -raft-addr 127.0.0.1:$RAFT_PORT"
  "$BIN" server -dev -http-addr "127.0.0.1:$PORT" -raft-addr "127.0.0.1:$RAFT_PORT" \
    >"$WORK/server.log" 2>&1 </dev/null &
  SERVER_PID=$!
  started=1
  for ((i = 0; ; i++)); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      started=0
      break
    fi
    leader=$(curl -s --max-time 1 "http://127.0.0.1:$PORT/v1/status/leader" || true)
    [[ -n $leader && $leader != '""' ]] && break
    ((i < START_TIMEOUT_S * 10)) || fail "no leader within ${START_TIMEOUT_S}s"
    sleep 0.1
  done
  ((started)) && break
  grep -q "Address already in use" "$WORK/server.log" && ((attempt < 5)) ||
    fail "the server exited during start"
  echo "a port was taken meanwhile; picking again"
done
NODE=$(curl -s --max-time 2 "http://127.0.0.1:$PORT/v1/agent/self" | jq -r .Config.NodeName)
HOST=$(hostname)
echo "leader $leader, agent node name \"$NODE\", hostname \"$HOST\""

# =======================================================================================
section "the guide: Leader Election (Consul guide)"
KEY=service/dbservice/leader   # the guide's service/<service name>/leader

step "create a session (the guide: returns {\"ID\": ...})"
run 'curl  -X PUT -d '\''{"Name": "dbservice"}'\'' \
  http://localhost:8500/v1/session/create'
expect "$OUT" 'the answer is an object holding only the session ID, a UUID' \
  'keys == ["ID"] and (.ID | test($uuid))' --arg uuid "$UUID_RE"
SID=$(jq -r .ID <<<"$OUT")

step "acquire <key> for this session (the guide: true or false; the lock is free: true)"
# The guide's <body> placeholder; its read-back example shows Value "Ym9keQ==" = "body".
run 'curl -X PUT -d @BODY@ http://localhost:8500/v1/kv/@KEY@?acquire=@SESSION@' \
  BODY body KEY "$KEY" SESSION "$SID"
[[ $OUT == true ]] || fail "acquire by the first session: expected true, got '$OUT'"
echo "ok: true, this node is the leader"

step "a second contender (another session) tries the same key (the guide: false)"
run 'curl  -X PUT -d '\''{"Name": "dbservice"}'\'' \
  http://localhost:8500/v1/session/create'
SID2=$(jq -r .ID <<<"$OUT")
[[ -n $SID2 && $SID2 != "$SID" ]] || fail "second session create: $OUT"
run 'curl -X PUT -d @BODY@ http://localhost:8500/v1/kv/@KEY@?acquire=@SESSION@' \
  BODY body2 KEY "$KEY" SESSION "$SID2"
[[ $OUT == false ]] || fail "acquire by a second session while held: expected false, got '$OUT'"
echo "ok: false, some other node holds the lock"

step "discover the leader by reading <key>"
run 'curl  http://localhost:8500/v1/kv/@KEY@' KEY "$KEY"
expect "$OUT" 'one entry: Session is the holder, Value "Ym9keQ==", Flags 0, LockIndex 1' \
  'length == 1 and (.[0] | .Session == $sid and .Value == "Ym9keQ==" and .Flags == 0
     and .Key == $key and .LockIndex == 1)' --arg sid "$SID" --arg key "$KEY"
expect "$OUT" 'CreateIndex == ModifyIndex (the acquire created the key), both > 0' \
  '.[0] | .CreateIndex == .ModifyIndex and .ModifyIndex > 0'
KEY_INDEX=$(jq -r '.[0].ModifyIndex' <<<"$OUT")

step "details about the session"
run 'curl http://localhost:8500/v1/session/info/@SESSION@' SESSION "$SID"
expect "$OUT" 'one session: LockDelay 1.5e+10 (15000000000 ns), Name dbservice, ID' \
  'length == 1 and (.[0] | .LockDelay == 15000000000 and .Name == "dbservice" and .ID == $sid)' \
  --arg sid "$SID"
expect "$OUT" 'checks ["serfHealth"] (the guide: "Checks"; Consul >= 1.7 reports "NodeChecks", 1.6)' \
  '.[0] | (.Checks // .NodeChecks) == ["serfHealth"]'
expect "$OUT" "Node is the agent's node name and CreateIndex precedes the key's" \
  '.[0] | .Node == $node and .CreateIndex < ($kidx | tonumber)' \
  --arg node "$NODE" --arg kidx "$KEY_INDEX"

step "watch <key> with a blocking query; the leader then steps down (release)"
start_blocking 'curl  http://localhost:8500/v1/kv/@KEY@?index=@INDEX@' KEY "$KEY" INDEX "$KEY_INDEX"
run 'curl -X PUT http://localhost:8500/v1/kv/@KEY@?release=@SESSION@' KEY "$KEY" SESSION "$SID"
[[ $OUT == true ]] || fail "release by the holder: expected true, got '$OUT'"
echo "ok: release answered true"
await_blocking
expect "$OUT" 'the watcher sees the Session cleared and a higher ModifyIndex (3.1)' \
  'length == 1 and (.[0] | (has("Session") | not) and .ModifyIndex > ($old | tonumber))' \
  --arg old "$KEY_INDEX"

step "read <key> again: no Session means no leader"
run 'curl  http://localhost:8500/v1/kv/@KEY@' KEY "$KEY"
expect "$OUT" 'the Session field is gone (omitted when unlocked, 2.3); LockIndex stays 1' \
  '.[0] | (has("Session") | not) and .LockIndex == 1'
expect "$OUT" 'the release sent no body, so the value is now null (2.5 release step 4)' \
  '.[0].Value == null'

step "a new leader is elected: the other contender acquires (release starts no lock-delay, 2.6)"
run 'curl -X PUT -d @BODY@ http://localhost:8500/v1/kv/@KEY@?acquire=@SESSION@' \
  BODY body2 KEY "$KEY" SESSION "$SID2"
[[ $OUT == true ]] || fail "acquire by the second session after release: expected true, got '$OUT'"
run 'curl  http://localhost:8500/v1/kv/@KEY@' KEY "$KEY"
expect "$OUT" 'the new leader holds the key: Session, Value "body2", LockIndex 2 (11 row 2)' \
  '.[0] | .Session == $sid and .Value == $val and .LockIndex == 2' \
  --arg sid "$SID2" --arg val "$(b64 body2)"

# =======================================================================================
section "the page: Application leader election (Consul docs)"
# The page sends the ACL token in X-Consul-Token; tenure accepts and ignores tokens.
export CONSUL_HTTP_TOKEN=6d1a2a3c-7f64-4e0e-9d1e-0d2c4f6a8b10
echo "CONSUL_HTTP_TOKEN=$CONSUL_HTTP_TOKEN (made up; tokens are accepted and ignored)"
SESSION_FIELDS='["ID","Name","Node","LockDelay","Behavior","TTL","NodeChecks","ServiceChecks",
  "CreateIndex","ModifyIndex"]'

step "create a new session named after the node's hostname"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --data '\''{"Name": "'\''`hostname`'\''"}'\'' \
  --request PUT \
  http://127.0.0.1:8500/v1/session/create | jq'
expect "$OUT" 'the answer is an object holding only the session ID, a UUID' \
  'keys == ["ID"] and (.ID | test($uuid))' --arg uuid "$UUID_RE"
SID=$(jq -r .ID <<<"$OUT")

step "verify the session with /v1/session/list"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --request GET \
  http://127.0.0.1:8500/v1/session/list | jq'
expect "$OUT" 'a JSON array containing the new session' \
  'type == "array" and (map(select(.ID == $sid)) | length == 1)' --arg sid "$SID"
SESSION_JSON=$(jq -c --arg sid "$SID" '.[] | select(.ID == $sid)' <<<"$OUT")
expect "$SESSION_JSON" 'Name is the hostname, Node the agent node, all else defaults:
    LockDelay 15000000000, Behavior "release", TTL "", NodeChecks ["serfHealth"],
    ServiceChecks null' \
  '.Name == $host and .Node == $node and .LockDelay == 15000000000 and .Behavior == "release"
     and .TTL == "" and .NodeChecks == ["serfHealth"] and .ServiceChecks == null' \
  --arg host "$HOST" --arg node "$NODE"
expect "$SESSION_JSON" 'CreateIndex == ModifyIndex; fields in the page order (1.6)' \
  '.CreateIndex == .ModifyIndex and keys_unsorted == $fields' --argjson fields "$SESSION_FIELDS"

step "acquire the lock on service/leader"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --data '\''{"Node": "'\''`hostname`'\''"}'\'' \
  --request PUT \
  http://localhost:8500/v1/kv/service/leader?acquire=@SESSION@ | jq' SESSION "$SID"
[[ $OUT == true ]] || fail "acquire: expected true, got '$OUT'"
echo "ok: true, the local instance is the leader"

step "watch the key: first the latest index (index=1 answers at once)"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --request GET \
  http://127.0.0.1:8500/v1/kv/service/leader?index=1 | jq'
# The page's sample shows LockIndex 0 next to a Session; after a real acquire Consul
# reports 1 (consul-api.md 11 row 1), which is what we check.
expect "$OUT" 'the key data: Key, Flags 0, Value = base64 of the body, Session, LockIndex 1' \
  'length == 1 and (.[0] | .Key == "service/leader" and .Flags == 0 and .Value == $val
     and .Session == $sid and .LockIndex == 1 and .CreateIndex <= .ModifyIndex)' \
  --arg val "$(b64 "{\"Node\": \"$HOST\"}")" --arg sid "$SID"
KEY_INDEX=$(jq -r '.[0].ModifyIndex' <<<"$OUT")
CREATE_INDEX=$(jq -r '.[0].CreateIndex' <<<"$OUT")

step "blocking query with that ModifyIndex; it hangs until a change is made on the key"
start_blocking 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --request GET \
  http://127.0.0.1:8500/v1/kv/service/leader?index=@INDEX@ | jq' INDEX "$KEY_INDEX"
# The change: the page's second sample shows the same Session with a new Value, i.e. the
# holder rewriting its data (an acquire by the holding session, 11 row 3).
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --data '\''{"Node": "'\''`hostname`'\''-1"}'\'' \
  --request PUT \
  http://localhost:8500/v1/kv/service/leader?acquire=@SESSION@ | jq' SESSION "$SID"
[[ $OUT == true ]] || fail "re-acquire by the holder with a new value: expected true, got '$OUT'"
await_blocking
expect "$OUT" 'new data: same Session, CreateIndex, LockIndex; new Value; higher ModifyIndex' \
  'length == 1 and (.[0] | .Session == $sid and .Value == $val and .LockIndex == 1
     and .CreateIndex == ($cidx | tonumber) and .ModifyIndex > ($old | tonumber))' \
  --arg sid "$SID" --arg val "$(b64 "{\"Node\": \"$HOST-1\"}")" \
  --arg cidx "$CREATE_INDEX" --arg old "$KEY_INDEX"

step "renew a session (created with a TTL of 30s for this part, as in the page's sample)"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --data '\''{"Name": "test", "TTL": "30s"}'\'' \
  --request PUT \
  http://127.0.0.1:8500/v1/session/create | jq'
TTL_SID=$(jq -r .ID <<<"$OUT")
[[ $TTL_SID =~ ^[0-9a-f-]{36}$ ]] || fail "TTL session create: $OUT"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --request PUT \
  http://127.0.0.1:8500/v1/session/renew/@SESSION@ | jq' SESSION "$TTL_SID"
expect "$OUT" 'renew prints the session: [ {ID, Name "test", TTL "30s", defaults...} ] (1.5)' \
  'length == 1 and (.[0] | .ID == $sid and .Name == "test" and .Node == $node
     and .LockDelay == 15000000000 and .Behavior == "release" and .TTL == "30s"
     and .NodeChecks == ["serfHealth"] and .ServiceChecks == null
     and .CreateIndex == .ModifyIndex)' --arg sid "$TTL_SID" --arg node "$NODE"
expect "$OUT" 'fields in the page order (1.6)' '.[0] | keys_unsorted == $fields' \
  --argjson fields "$SESSION_FIELDS"

step "release the lock"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --data '\''{"Node": "'\''`hostname`'\''"}'\'' \
  --request PUT \
  http://localhost:8500/v1/kv/service/leader?release=@SESSION@ | jq' SESSION "$SID"
[[ $OUT == true ]] || fail "release: expected true, got '$OUT'"
echo "ok: true"
run 'curl --silent \
  --header "X-Consul-Token: $CONSUL_HTTP_TOKEN" \
  --request GET \
  http://127.0.0.1:8500/v1/kv/service/leader | jq'
expect "$OUT" 'after the release the key shows no Session; its value is the release body (2.5)' \
  'length == 1 and (.[0] | (has("Session") | not) and .Value == $val and .LockIndex == 1)' \
  --arg val "$(b64 "{\"Node\": \"$HOST\"}")"

section "PASS: both walkthroughs behave as Consul's documents describe"
