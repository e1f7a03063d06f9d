#!/usr/bin/env bash
# Runs docs/tls.md as a reader would: its ```sh blocks, in order, as one
# bash script in an empty directory, inside a network namespace of its own
# (unshare -n, loopback up) so that the page's fixed ports (8501-8503,
# 8301-8303) cannot collide with anything else. Then checks what the page
# says each step prints. Exits non-zero at the first difference.
#
# Usage: TENURE_BIN=/path/to/tenure bash tests/integration/test_tls_walkthrough.sh
set -euo pipefail

BIN=${TENURE_BIN:-}
[[ -n $BIN && -x $BIN ]] || { echo "FAIL: TENURE_BIN must name the tenure binary" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
DOC="$HERE/../../docs/tls.md"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tenure-tls-walkthrough.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The page's sh blocks, in order.
awk '/^```sh$/ {inside=1; next} /^```$/ {inside=0} inside {print}' "$DOC" > "$WORK/page.sh"
[[ -s $WORK/page.sh ]] || { echo "FAIL: no sh blocks in $DOC"; exit 1; }

mkdir "$WORK/bin"
ln -s "$BIN" "$WORK/bin/tenure"
# Debian's python3 (python3-consul), whatever else is first on PATH.
cat > "$WORK/run.sh" <<SCRIPT
set -euo pipefail
ip link set lo up
cd "$WORK"
export PATH="$WORK/bin:/usr/bin:/bin"
# Every server the page starts ends with this script, whatever happens.
trap 'kill \$(jobs -p) 2>/dev/null || true' EXIT
source "$WORK/page.sh"
SCRIPT

if ! timeout 240 unshare -n bash "$WORK/run.sh" > "$WORK/out.txt" 2>&1; then
  echo "FAIL: the page's commands failed; output:"
  cat "$WORK/out.txt"
  for log in "$WORK"/server*.log; do echo "--- $log"; tail -20 "$log"; done
  exit 1
fi
cat "$WORK/out.txt"

expect() {
  grep -qF -- "$1" "$2" || { echo "FAIL: expected \"$1\" in $2"; cat "$2"; exit 1; }
}
out="$WORK/out.txt"
expect '"127.0.0.1:830' "$out"                       # the leader's raft address
expect 'true' "$out"                                  # the write through server 2
expect 'hello over TLS' "$out"                        # read back through server 3
expect 'refused: no client certificate' "$out"
expect 'refused: unknown CA' "$out"
expect 'Client sent an HTTP request to an HTTPS server.' "$out"
expect 'python-consul read: yes' "$out"
expect 'candidate-a leads with fencing token ' "$out"
expect 'SIGHUP: reloaded TLS certificate server1.pem and key server1-key.pem' "$out"
for n in 1 2 3; do
  expect "serving the Consul API on https://127.0.0.1:850$n (client certificates required)" \
    "$WORK/server$n.log"
  expect "raft over mutual TLS: peers need a certificate signed by ca.pem" "$WORK/server$n.log"
done
echo "PASS: docs/tls.md ran as written"
