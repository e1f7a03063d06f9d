"""The ACL matrix (docs/acl.md, docs/security.md): every token kind by every endpoint and method
the server serves, each cell the answer Consul would give, run against real
servers.

Two servers run side by side, each with -acl-enabled, an
-acl-initial-management secret of its own and -node acl-node:
  deny   -acl-default-policy deny (the docs' recommendation), and
         -acl-token-min-expiration-ttl 1s for the expired token;
  allow  -acl-default-policy allow (Consul's default) and
         -acl-enable-key-list-policy, so that a recursive read or a key
         listing first needs `list` on the prefix (Consul's KVS.List and
         KVS.ListKeys ask KeyList before filtering).

The token kinds (the columns), and the server each one is tried on:
  mgmt        deny   the -acl-initial-management secret (global-management)
  anon+allow  allow  no token: the anonymous token under default allow
  anon+deny   deny   no token: the anonymous token under default deny
  candidate   deny   policy `candidate`: the token of one election's candidate
  read-only   deny   policy `read-only`
  observer    deny   policy `observer`: reads ACLs, the operator and agent
                     endpoints and service/ but service/other/ (a longer
                     deny prefix inside a read prefix); added to the kinds
                     above for acl:read without acl:write (secrets
                     shown as <hidden>) and operator:read without write
  deny-all    allow  policy `deny-all`: deny on every resource; tried on
                     the allow server, where nothing but its own rules can
                     refuse it
  expired     deny   a global-management token made with ExpirationTTL 1s,
                     used once it is refused (so an expiry the server did
                     not enforce would show as successes everywhere)
  unknown     deny   a random secret no token has

The rows (REQUESTS) say what each request sends and which permission a
refusal names; the grid (MATRIX) says what each token kind must get. Every
cell runs against a real server; its secret goes, in turn by cell, as
X-Consul-Token, ?token= and Authorization: Bearer, so all three ways a
client can send one are crossed with every endpoint. Before a cell its
row's setup runs with the management token (a session to acquire with, a
key whose index a cas needs, a token to delete...), and after it whatever
the row may change is put back, so cells do not depend on each other.

The deny server's cells go over HTTPS with a client certificate
(-tls-verify-incoming), the allow server's over clear HTTP: the TLS port
must enforce every rule the clear one does (docs/tls.md).

The test prints the number of cells, of those that matched and of
unauthorized successes: a 2xx where the grid says the token must be
refused, or an answer that shows an entry (a key, a session, a secret) the
token may not read. Both must be as expected (every cell matched, 0
unauthorized) for the test to pass; each mismatch is printed with the
request and the answer.
"""

import base64
import json
import re
import shutil
import ssl
import sys
import tempfile
import threading
import unittest
import uuid

from tenure_testlib import Client, DevServer, free_port, poll_until
from test_pki import Pki

NODE = "acl-node"
GLOBAL_MANAGEMENT = "00000000-0000-0000-0000-000000000001"
ANONYMOUS_ACCESSOR = "00000000-0000-0000-0000-000000000002"

# The fixture each server holds before every cell, under short names the
# grid uses: keys (bl, bc, ol) and one session (s, named "fixture", on the
# servers' node).
KEYS = {
    "bl": "service/billing/leader",
    "bc": "service/billing/config",
    "ol": "service/other/leader",
}
FIXTURE_SESSION = "fixture"

POLICIES = {
    # The minimal rules of one election's candidate (docs/acl.md).
    "candidate": 'key_prefix "service/billing/" { policy = "write" }\n'
                 'session_prefix "" { policy = "write" }',
    "read-only": 'key_prefix "" { policy = "read" }\n'
                 'session_prefix "" { policy = "read" }',
    "observer": 'key_prefix "service/" { policy = "read" }\n'
                'key_prefix "service/other/" { policy = "deny" }\n'
                'session_prefix "" { policy = "read" }\n'
                'agent_prefix "" { policy = "read" }\n'
                'operator = "read"\n'
                'acl = "read"',
    "deny-all": 'key_prefix "" { policy = "deny" }\n'
                'session_prefix "" { policy = "deny" }\n'
                'agent_prefix "" { policy = "deny" }\n'
                'node_prefix "" { policy = "deny" }\n'
                'operator = "deny"\n'
                'acl = "deny"',
}

# column: (server, how its secret is made: "management", "anonymous",
# "policy:<name>", "expired", "unknown")
COLUMNS = {
    "mgmt": ("deny", "management"),
    "anon+allow": ("allow", "anonymous"),
    "anon+deny": ("deny", "anonymous"),
    "candidate": ("deny", "policy:candidate"),
    "read-only": ("deny", "policy:read-only"),
    "observer": ("deny", "policy:observer"),
    "deny-all": ("allow", "policy:deny-all"),
    "expired": ("deny", "expired"),
    "unknown": ("deny", "unknown"),
}

# What each row sends. Fields:
#   method, path, body   {name} in path and body is filled from the fixture
#                        ({node}, {target}: a fixture token's accessor,
#                        {policy_id}: the read-only policy's ID,
#                        {fixture_session}) and from the
#                        row's setup ({index}, {session}, {token}, {policy})
#   permission           what a refusal names: "<resource>:<level> <name>"
#                        (no name for unlabeled resources and the root
#                        prefix); "bootstrap" for the bootstrap's own text
#   setup                made with the management token before the cell
#   changes              what the cell may change, put back after it
#   kind                 how a 200 is checked beyond its status: "keys"
#                        (a ?keys list), "entries" (?recurse), "txn"
#                        (Results' keys), "sessions" (names), "token",
#                        "tokens", "self", "true" (the body is true) or ""
#                        (the status only)
REQUESTS = {
    # --- KV reads -------------------------------------------------------------------
    "kv.get": ("GET", "/v1/kv/service/billing/leader", None,
               "key:read service/billing/leader", None, (), ""),
    "kv.get.other": ("GET", "/v1/kv/service/other/leader", None,
                     "key:read service/other/leader", None, (), ""),
    "kv.get.missing": ("GET", "/v1/kv/service/billing/missing", None,
                       "key:read service/billing/missing", None, (), ""),
    "kv.get.raw": ("GET", "/v1/kv/service/billing/leader?raw", None,
                   "key:read service/billing/leader", None, (), ""),
    # The lock history (docs/history.md): key:read on the key, as a KV read.
    "history.get": ("GET", "/v1/tenure/history/service/billing/lock", None,
                    "key:read service/billing/lock", "locked", ("sessions", "kv"), ""),
    "history.get.other": ("GET", "/v1/tenure/history/service/other/leader", None,
                          "key:read service/other/leader", None, (), ""),
    # An etcd election's succession (docs/history.md): key:read on the
    # whole prefix <name>/, with no deny under it (KeyReadPrefix).
    "history.succession": ("GET", "/v1/tenure/history/service/billing?succession", None,
                           "key:read service/billing/", "locked", ("sessions", "kv"), ""),
    "history.succession.wide": ("GET", "/v1/tenure/history/service?succession", None,
                                "key:read service/", "locked", ("sessions", "kv"), ""),
    # The fair-acquire queue (decision 0027): key:read on the key.
    "queue.get": ("GET", "/v1/tenure/queue/service/billing/lock", None,
                  "key:read service/billing/lock", None, (), ""),
    "queue.get.other": ("GET", "/v1/tenure/queue/service/other/leader", None,
                        "key:read service/other/leader", None, (), ""),
    "kv.recurse": ("GET", "/v1/kv/service/?recurse", None, "key:list service/", None, (),
                   "entries"),
    "kv.recurse.other": ("GET", "/v1/kv/service/other/?recurse", None,
                         "key:list service/other/", None, (), "entries"),
    "kv.keys": ("GET", "/v1/kv/service/?keys", None, "key:list service/", None, (), "keys"),
    "kv.keys.root": ("GET", "/v1/kv/?keys", None, "key:list", None, (), "keys"),
    # --- KV writes ------------------------------------------------------------------
    "kv.put": ("PUT", "/v1/kv/service/billing/put", "v", "key:write service/billing/put",
               None, ("kv",), "true"),
    "kv.put.other": ("PUT", "/v1/kv/service/other/put", "v", "key:write service/other/put",
                     None, ("kv",), "true"),
    "kv.cas": ("PUT", "/v1/kv/service/billing/cas?cas={index}", "v2",
               "key:write service/billing/cas", "key:service/billing/cas", ("kv",), "true"),
    "kv.acquire": ("PUT", "/v1/kv/service/billing/lock?acquire={session}", "me",
                   "key:write service/billing/lock", "session", ("sessions", "kv"), "true"),
    # The fair acquire (decision 0027): key:write, as an acquire (a free key: granted at once).
    "kv.acquire.queue": ("PUT", "/v1/kv/service/billing/lock?acquire={session}&queue", "me",
                         "key:write service/billing/lock", "session", ("sessions", "kv"), "true"),
    "kv.release": ("PUT", "/v1/kv/service/billing/lock?release={session}", "",
                   "key:write service/billing/lock", "locked", ("sessions", "kv"), "true"),
    "kv.delete": ("DELETE", "/v1/kv/service/billing/del", None,
                  "key:write service/billing/del", "key:service/billing/del", ("kv",), "true"),
    "kv.delete.cas": ("DELETE", "/v1/kv/service/billing/del?cas={index}", None,
                      "key:write service/billing/del", "key:service/billing/del", ("kv",),
                      "true"),
    "kv.delete.tree": ("DELETE", "/v1/kv/service/billing/tree/?recurse", None,
                       "key:write service/billing/tree/", "tree", ("kv",), "true"),
    "kv.delete.tree.wide": ("DELETE", "/v1/kv/service/?recurse", None, "key:write service/",
                            None, ("kv",), "true"),
    # --- Transactions ---------------------------------------------------------------
    "txn.read": ("PUT", "/v1/txn",
                 '[{"KV": {"Verb": "get", "Key": "service/billing/leader"}},'
                 ' {"KV": {"Verb": "get-tree", "Key": "service/"}}]',
                 "", None, (), "txn"),
    "txn.check-index": ("PUT", "/v1/txn",
                        '[{"KV": {"Verb": "check-index", "Key": "service/other/leader",'
                        ' "Index": {index}}}]',
                        "key:read service/other/leader", "index:service/other/leader", (), ""),
    "txn.write": ("PUT", "/v1/txn",
                  '[{"KV": {"Verb": "set", "Key": "service/billing/txn", "Value": "eA=="}}]',
                  "key:write service/billing/txn", None, ("kv",), ""),
    "txn.write.other": ("PUT", "/v1/txn",
                        '[{"KV": {"Verb": "set", "Key": "service/other/txn", "Value": "eA=="}}]',
                        "key:write service/other/txn", None, ("kv",), ""),
    "txn.delete-tree": ("PUT", "/v1/txn",
                        '[{"KV": {"Verb": "delete-tree", "Key": "service/billing/tree/"}}]',
                        "key:write service/billing/tree/", "tree", ("kv",), ""),
    # --- Sessions -------------------------------------------------------------------
    "session.create": ("PUT", "/v1/session/create", '{"Name": "new", "LockDelay": "0s"}',
                       "session:write {node}", None, ("sessions",), ""),
    "session.destroy": ("PUT", "/v1/session/destroy/{session}", None, "session:write {node}",
                        "session", ("sessions",), "true"),
    "session.renew": ("PUT", "/v1/session/renew/{session}", None, "session:write {node}",
                      "session", ("sessions",), ""),
    "session.info": ("GET", "/v1/session/info/{fixture_session}", None, "", None, (),
                     "sessions"),
    "session.node": ("GET", "/v1/session/node/{node}", None, "", None, (), "sessions"),
    "session.list": ("GET", "/v1/session/list", None, "", None, (), "sessions"),
    # --- Any route: OPTIONS -----------------------------------------------------------
    "kv.options": ("OPTIONS", "/v1/kv/service/billing/leader", None, "", None, (), ""),
    # --- Status, agent, operator ----------------------------------------------------
    "status.leader": ("GET", "/v1/status/leader", None, "", None, (), ""),
    "status.peers": ("GET", "/v1/status/peers", None, "", None, (), ""),
    "agent.self": ("GET", "/v1/agent/self", None, "agent:read {node}", None, (), ""),
    "agent.metrics": ("GET", "/v1/agent/metrics", None, "agent:read {node}", None, (), ""),
    "metrics": ("GET", "/metrics", None, "agent:read {node}", None, (), ""),
    "operator.configuration": ("GET", "/v1/operator/raft/configuration", None, "operator:read",
                               None, (), ""),
    "operator.autopilot-health": ("GET", "/v1/operator/autopilot/health", None,
                                  "operator:read", None, (), ""),
    "agent.health.live": ("GET", "/v1/agent/health/live", None, "", None, (), ""),
    "agent.health.ready": ("GET", "/v1/agent/health/ready", None, "", None, (), ""),
    # The dashboard's static files (docs/dashboard.md): no rule needed.
    "ui.index": ("GET", "/ui/", None, "", None, (), ""),
    "ui.asset": ("GET", "/ui/app.js", None, "", None, (), ""),
    "operator.transfer-leader": ("POST", "/v1/operator/raft/transfer-leader", None,
                                 "operator:write", None, (), ""),
    "operator.peer.delete": ("DELETE", "/v1/operator/raft/peer?id=99", None, "operator:write",
                             None, (), ""),
    # --- ACLs -----------------------------------------------------------------------
    "acl.bootstrap": ("PUT", "/v1/acl/bootstrap", None, "bootstrap", None, ("tokens",), ""),
    "acl.token.create": ("PUT", "/v1/acl/token", '{"Description": "made by a cell"}',
                         "acl:write", None, ("tokens",), ""),
    "acl.token.read": ("GET", "/v1/acl/token/{target}", None, "acl:read", None, (), "token"),
    "acl.token.update": ("PUT", "/v1/acl/token/{token}", '{"Description": "updated"}',
                         "acl:write", "token", ("tokens",), ""),
    "acl.token.clone": ("PUT", "/v1/acl/token/{target}/clone", '{"Description": "a clone"}',
                        "acl:write", None, ("tokens",), ""),
    "acl.token.delete": ("DELETE", "/v1/acl/token/{token}", None, "acl:write", "token",
                         ("tokens",), "true"),
    "acl.token.self": ("GET", "/v1/acl/token/self", None, "", None, (), "self"),
    "acl.token.list": ("GET", "/v1/acl/tokens", None, "acl:read", None, (), "tokens"),
    "acl.policy.create": ("PUT", "/v1/acl/policy", '{"Name": "made-by-a-cell"}', "acl:write",
                          None, ("policies",), ""),
    "acl.policy.read": ("GET", "/v1/acl/policy/{policy_id}", None, "acl:read", None, (), ""),
    "acl.policy.read-by-name": ("GET", "/v1/acl/policy/name/read-only", None, "acl:read", None,
                                (), ""),
    "acl.policy.update": ("PUT", "/v1/acl/policy/{policy}",
                          '{"Name": "scratch", "Description": "updated"}', "acl:write",
                          "policy", ("policies",), ""),
    "acl.policy.delete": ("DELETE", "/v1/acl/policy/{policy}", None, "acl:write", "policy",
                          ("policies",), "true"),
    "acl.policy.list": ("GET", "/v1/acl/policies", None, "acl:read", None, (), ""),
    # --- Snapshots (docs/snapshots.md) ----------------------------------------------
    # The restore's body is not a snapshot file: an allowed caller gets the
    # server's 400 for it, after the ACL check, and nothing changes.
    "snapshot.save": ("GET", "/v1/snapshot", None, "acl:write", None, (), ""),
    "snapshot.restore": ("PUT", "/v1/snapshot", "not a snapshot", "acl:write", None, (), ""),
}

# The expected answers. A cell is:
#   200, 400, 404 ...  that status (a 200 is also checked as its row's kind says)
#   403                refused with Consul's text for this token kind (the
#                      anonymous form, or the one naming the AccessorID)
#                      and the row's permission
#   409                a transaction refused before any op ran: 409 whose
#                      Errors[0].What is that same text
#   nf                 403 "ACL not found" (an unknown or expired secret)
#   boot               403 "Permission denied: ACL bootstrap no longer allowed
#                      (reset index: N)"
#   [a,b]              a listing (in order) of the fixture's short names
#                      (keys bl, bc, ol; session s); [] is an empty one
#   +f                 X-Consul-Results-Filtered-By-Acls: true, which must be
#                      absent otherwise (on every listing row)
#   [secret]/[hidden]  a token read shows the SecretID, or "<hidden>"
#   [self]             /v1/acl/token/self shows the caller's own token
MATRIX = """
row                       mgmt              anon+allow        anon+deny  candidate        read-only         observer         deny-all   expired  unknown

# Reads of one key: key:read, checked before the key is looked up, so a
# refused token learns nothing about a missing key (Consul's KVS.Get).
kv.get                    200               200               403        200              200               200              403        nf       nf
kv.get.other              200               200               403        403              200               403              403        nf       nf
kv.get.missing            404               404               403        404              404               404              403        nf       nf
kv.get.raw                200               200               403        200              200               200              403        nf       nf
history.get               200               200               403        200              200               200              403        nf       nf
history.get.other         404               404               403        403              404               403              403        nf       nf
history.succession        200               200               403        200              200               200              403        nf       nf
history.succession.wide   200               200               403        403              200               403              403        nf       nf
queue.get                 200               200               403        200              200               200              403        nf       nf
queue.get.other           200               200               403        403              200               403              403        nf       nf

# Listings are filtered, never refused, on the deny server: 404 when nothing
# is left under a prefix, [] at the root, and the filtered header only for a
# caller that sent a token (Consul's maskResultsFilteredByACLs). On the allow
# server the list policy refuses deny-all outright ('key:list').
kv.recurse                200[bc,bl,ol]     200[bc,bl,ol]     404        200[bc,bl]+f     200[bc,bl,ol]     200[bc,bl]+f     403        nf       nf
kv.recurse.other          200[ol]           200[ol]           404        404+f            200[ol]           404+f            403        nf       nf
kv.keys                   200[bc,bl,ol]     200[bc,bl,ol]     404        200[bc,bl]+f     200[bc,bl,ol]     200[bc,bl]+f     403        nf       nf
kv.keys.root              200[bc,bl,ol]     200[bc,bl,ol]     200[]      200[bc,bl]+f     200[bc,bl,ol]     200[bc,bl]+f     403        nf       nf

# Every KV write (set, cas, acquire, release, delete, delete?cas) needs
# key:write on the key; acquire does not ask anything of the session's own
# ACL (Consul's KVS.Apply), so the candidate acquires with a session the
# management token made. A recursive delete needs write on the whole prefix
# (KeyWritePrefix): the candidate may not delete service/ although it may
# write service/billing/.
kv.put                    200               200               403        200              403               403              403        nf       nf
kv.put.other              200               200               403        403              403               403              403        nf       nf
kv.cas                    200               200               403        200              403               403              403        nf       nf
kv.acquire                200               200               403        200              403               403              403        nf       nf
kv.acquire.queue          200               200               403        200              403               403              403        nf       nf
kv.release                200               200               403        200              403               403              403        nf       nf
kv.delete                 200               200               403        200              403               403              403        nf       nf
kv.delete.cas             200               200               403        200              403               403              403        nf       nf
kv.delete.tree            200               200               403        200              403               403              403        nf       nf
kv.delete.tree.wide       200               200               403        403              403               403              403        nf       nf

# Transactions: get and get-tree are filtered on the way out (no list check,
# even with the list policy: Consul's kvsPreApply leaves them to the
# output); check-index needs key:read; writes key:write; delete-tree
# KeyWritePrefix. A refused op fails the whole transaction with 409.
txn.read                  200[bl,bc,bl,ol]  200[bl,bc,bl,ol]  200[]      200[bl,bc,bl]+f  200[bl,bc,bl,ol]  200[bl,bc,bl]+f  200[]+f    nf       nf
txn.check-index           200               200               409        409              200               409              409        nf       nf
txn.write                 200               200               409        200              409               409              409        nf       nf
txn.write.other           200               200               409        409              409               409              409        nf       nf
txn.delete-tree           200               200               409        200              409               409              409        nf       nf

# Sessions: session:write on the session's node (the server's, acl-node)
# to create, destroy and renew; reads filtered by session:read.
session.create            200               200               403        200              403               403              403        nf       nf
session.destroy           200               200               403        200              403               403              403        nf       nf
session.renew             200               200               403        200              403               403              403        nf       nf
session.info              200[s]            200[s]            200[]      200[s]           200[s]            200[s]           200[]+f    nf       nf
session.node              200[s]            200[s]            200[]      200[s]           200[s]            200[s]           200[]+f    nf       nf
session.list              200[s]            200[s]            200[]      200[s]           200[s]            200[s]           200[]+f    nf       nf

# /v1/status is open to anyone: Consul does not even resolve the token. Nor
# does it for OPTIONS, answered by the HTTP layer with the Allow header.
kv.options                200               200               200        200              200               200              200        200      200
status.leader             200               200               200        200              200               200              200        200      200
status.peers              200               200               200        200              200               200              200        200      200
# The probes resolve no token (docs/operations.md): load balancers send none.
agent.health.live         200               200               200        200              200               200              200        200      200
agent.health.ready        200               200               200        200              200               200              200        200      200
# The dashboard's files resolve no token either (docs/security.md): the
# page holds no data; what it shows comes from the API under the user's token.
ui.index                  200               200               200        200              200               200              200        200      200
ui.asset                  200               200               200        200              200               200              200        200      200

# agent:read on the node; operator:read and operator:write. An allowed
# transfer or peer removal on a one-server cluster gets past the ACL check
# to the server's own 400 ("no other voter", "not a member").
agent.self                200               200               403        403              403               200              403        nf       nf
agent.metrics             200               200               403        403              403               200              403        nf       nf
metrics                   200               200               403        403              403               200              403        nf       nf
operator.configuration    200               200               403        403              403               200              403        nf       nf
operator.autopilot-health 200               200               403        403              403               200              403        nf       nf
operator.transfer-leader  400               400               403        403              403               403              403        nf       nf
operator.peer.delete      400               400               403        403              403               403              403        nf       nf

# The bootstrap resolves no token (Consul's ACL.BootstrapTokens), and the
# initial management token counted as the bootstrap: everybody gets the
# same refusal, even with an unknown or expired secret.
acl.bootstrap             boot              boot              boot       boot             boot              boot             boot       boot     boot

# Token and policy endpoints: acl:read to read, acl:write to change. Default
# allow grants neither (Consul's allow-all authorizer leaves out acl), so the
# anonymous token is refused on the allow server too. With only acl:read
# secrets read "<hidden>".
acl.token.create          200               403               403        403              403               403              403        nf       nf
acl.token.read            200[secret]       403               403        403              403               200[hidden]      403        nf       nf
acl.token.update          200               403               403        403              403               403              403        nf       nf
acl.token.clone           200               403               403        403              403               403              403        nf       nf
acl.token.delete          200               403               403        403              403               403              403        nf       nf
acl.token.list            200[secret]       403               403        403              403               200[hidden]      403        nf       nf
acl.policy.create         200               403               403        403              403               403              403        nf       nf
acl.policy.read           200               403               403        403              403               200              403        nf       nf
acl.policy.read-by-name   200               403               403        403              403               200              403        nf       nf
acl.policy.update         200               403               403        403              403               403              403        nf       nf
acl.policy.delete         200               403               403        403              403               403              403        nf       nf
acl.policy.list           200               403               403        403              403               200              403        nf       nf

# Snapshots hold every secret: acl:write, as in Consul (management), which
# default allow does not grant.
snapshot.save             200               403               403        403              403               403              403        nf       nf
snapshot.restore          400               403               403        403              403               403              403        nf       nf

# token/self looks the request's own secret up (Consul's ACLTokenSelf copies
# the request's token into TokenID and ACL.TokenRead finds it by secret): a
# token may always read itself, deny-all included, and a request without a
# token has no secret to find: 403 "ACL not found", under allow and deny.
acl.token.self            200[self]         nf                nf         200[self]        200[self]         200[self]        200[self]  nf       nf
"""

TRANSPORTS = ("header", "query", "bearer")


def parse_matrix(text):
    """The grid as {row: {column: cell}}, checked against COLUMNS and REQUESTS."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    header = lines[0].split()
    if header[0] != "row" or header[1:] != list(COLUMNS):
        raise ValueError(f"MATRIX columns {header[1:]} != {list(COLUMNS)}")
    grid = {}
    for line in lines[1:]:
        fields = line.split()
        if len(fields) != len(header):
            raise ValueError(f"MATRIX row has {len(fields)} fields, not {len(header)}: {line}")
        if fields[0] in grid or fields[0] not in REQUESTS:
            raise ValueError(f"MATRIX row {fields[0]!r} is repeated or not in REQUESTS")
        grid[fields[0]] = dict(zip(header[1:], fields[1:]))
    missing = set(REQUESTS) - set(grid)
    if missing:
        raise ValueError(f"REQUESTS rows without a MATRIX row: {sorted(missing)}")
    return grid


CELL = re.compile(r"^(?P<status>\d{3}|nf|boot)(?:\[(?P<list>[^\]]*)\])?(?P<filtered>\+f)?$")


def parse_cell(cell):
    m = CELL.match(cell)
    if not m:
        raise ValueError(f"bad MATRIX cell {cell!r}")
    listing = None if m.group("list") is None else [x for x in m.group("list").split(",") if x]
    return m.group("status"), listing, bool(m.group("filtered"))


def permission_text(accessor, permission):
    """Consul's denial text for `accessor` lacking `permission` ("key:read a/b")."""
    perm, _, name = permission.partition(" ")
    who = ("anonymous token" if accessor == ANONYMOUS_ACCESSOR
           else f"token with AccessorID '{accessor}'")
    text = f"Permission denied: {who} lacks permission '{perm}'"
    if name:
        text += " on " + json.dumps(name)
    if accessor == ANONYMOUS_ACCESSOR:
        text += (". The anonymous token is used implicitly when a request does not specify a"
                 " token.")
    return text


def wait_for_management(server, secret):
    """The first leader writes the -acl-initial-management token just after
    it is elected, so a request right after DevServer.start may still find
    no such secret ("ACL not found"), with Consul as with tenure."""
    poll_until(lambda: server.request("GET", "/v1/acl/token/self",
                                      headers={"X-Consul-Token": secret}).status == 200,
               timeout=15, message=f"the initial management token never worked on "
                                   f"{server.http_addr}")


class MatrixServer:
    """One ACL server, its management secret and its fixture."""

    def __init__(self, name, default_policy, extra_args, pki=None):
        """pki: serve the matrix over HTTPS with client certificates required
        (a test_pki.Pki): the same rules must hold on the TLS port."""
        self.name = name
        self.default_policy = default_policy
        self.management = str(uuid.uuid4())
        self.pki = pki
        tls_args = []
        if pki is not None:
            self.https_port = free_port()
            tls_args = ["-https-addr", f"127.0.0.1:{self.https_port}",
                        "-tls-cert-file", pki.server_cert, "-tls-key-file", pki.server_key,
                        "-tls-ca-file", pki.ca_cert, "-tls-verify-incoming"]
        self.server = DevServer(extra_args=[
            "-acl-enabled", "-acl-default-policy", default_policy,
            "-acl-initial-management", self.management, "-node", NODE,
            "-session-ttl-multiplier", "1", *tls_args, *extra_args])
        self.client = None
        self.vars = {"node": NODE}
        self.fixture_tokens = set()
        self.fixture_policies = set()
        self.expired_accessor = None

    def start(self):
        self.server.start()
        if self.pki is None:
            self.client = self.server.client(timeout=15.0)
        else:
            context = ssl.create_default_context(cafile=self.pki.ca_cert)
            context.load_cert_chain(self.pki.client_cert, self.pki.client_key)
            self.client = Client(f"localhost:{self.https_port}", timeout=15.0,
                                 ssl_context=context)
        wait_for_management(self.server, self.management)

    def close(self):
        if self.client is not None:
            self.client.close()
        self.server.close()

    def request(self, method, path, body=None, token=None, transport="header"):
        headers = {}
        if token is not None:
            if transport == "header":
                headers["X-Consul-Token"] = token
            elif transport == "bearer":
                headers["Authorization"] = "Bearer " + token
            else:
                path += ("&" if "?" in path else "?") + "token=" + token
        return self.client.request(method, path, body, headers)

    def admin(self, method, path, body=None, expect=200):
        """A request with the management token that must succeed; its JSON."""
        if body is not None and not isinstance(body, (str, bytes)):
            body = json.dumps(body)
        resp = self.request(method, path, body, self.management)
        if resp.status != expect:
            raise AssertionError(f"{self.name}: management {method} {path}: {resp!r}\n"
                                 + self.server.log_tail())
        return resp.json() if resp.body and resp.header("content-type", "").startswith(
            "application/json") else resp.text

    # --- the fixture -----------------------------------------------------------------

    def seed_keys(self):
        """Back to exactly the fixture's keys (scratch keys all live under service/)."""
        ops = [{"KV": {"Verb": "delete-tree", "Key": "service/"}}]
        ops += [{"KV": {"Verb": "set", "Key": key, "Value": "eA=="}} for key in KEYS.values()]
        self.admin("PUT", "/v1/txn", ops)

    def build_fixture(self):
        self.accessors = {}
        self.secrets = {}
        for name, rules in POLICIES.items():
            policy = self.admin("PUT", "/v1/acl/policy", {"Name": name, "Rules": rules})
            self.fixture_policies.add(policy["ID"])
            token = self.admin("PUT", "/v1/acl/token",
                               {"Description": name, "Policies": [{"Name": name}]})
            self.accessors[name] = token["AccessorID"]
            self.secrets[name] = token["SecretID"]
        self.fixture_policies.add(GLOBAL_MANAGEMENT)
        self.vars["policy_id"] = self.admin("GET", "/v1/acl/policy/name/read-only")["ID"]
        # The token rows read and clone: one every server has.
        target = self.admin("PUT", "/v1/acl/token",
                            {"Description": "target", "Policies": [{"Name": "read-only"}]})
        self.vars["target"] = target["AccessorID"]
        self.target_secret = target["SecretID"]
        self.fixture_tokens = {t["AccessorID"] for t in self.admin("GET", "/v1/acl/tokens")}
        self.management_accessor = self.admin("GET", "/v1/acl/token/self")["AccessorID"]
        self.seed_keys()
        self.vars["fixture_session"] = self.admin(
            "PUT", "/v1/session/create", {"Name": FIXTURE_SESSION})["ID"]

    def reset(self, changes):
        """Puts back what a cell may have changed."""
        if "sessions" in changes:
            for session in self.admin("GET", "/v1/session/list"):
                if session["ID"] != self.vars["fixture_session"]:
                    self.admin("PUT", "/v1/session/destroy/" + session["ID"])
        if "kv" in changes:
            self.seed_keys()
        if "tokens" in changes:
            for token in self.admin("GET", "/v1/acl/tokens"):
                if token["AccessorID"] not in self.fixture_tokens:
                    self.admin("DELETE", "/v1/acl/token/" + token["AccessorID"])
        if "policies" in changes:
            for policy in self.admin("GET", "/v1/acl/policies"):
                if policy["ID"] not in self.fixture_policies:
                    self.admin("DELETE", "/v1/acl/policy/" + policy["ID"])

    def setup(self, what):
        """Runs a row's setup; the values its path and body use."""
        out = {}
        if what is None:
            return out
        if what.startswith("key:"):
            key = what[4:]
            self.admin("PUT", "/v1/kv/" + key, "old")
            out["index"] = self.admin("GET", "/v1/kv/" + key)[0]["ModifyIndex"]
        elif what.startswith("index:"):
            out["index"] = self.admin("GET", "/v1/kv/" + what[6:])[0]["ModifyIndex"]
        elif what == "tree":
            for leaf in ("a", "b"):
                self.admin("PUT", "/v1/kv/service/billing/tree/" + leaf, "x")
        elif what in ("session", "locked"):
            out["session"] = self.admin("PUT", "/v1/session/create",
                                        {"Name": "scratch", "LockDelay": "0s", "TTL": "60s"})["ID"]
            if what == "locked":
                got = self.admin("PUT", "/v1/kv/service/billing/lock?acquire=" + out["session"],
                                 "held")
                if got is not True:
                    raise AssertionError(f"{self.name}: setup acquire answered {got!r}")
        elif what == "token":
            out["token"] = self.admin("PUT", "/v1/acl/token",
                                      {"Description": "scratch"})["AccessorID"]
        elif what == "policy":
            out["policy"] = self.admin("PUT", "/v1/acl/policy", {"Name": "scratch"})["ID"]
        else:
            raise ValueError(f"unknown setup {what!r}")
        return out


class Cell:
    """One run cell: what was expected and what came back."""

    def __init__(self, row, column, transport, request, expected):
        self.row, self.column, self.transport = row, column, transport
        self.request = request
        self.expected = expected
        self.problems = []
        self.unauthorized = False
        self.response = None

    def describe(self):
        method, path, body = self.request
        resp = self.response
        got = f"{resp.status} {resp.text[:300]!r}" if resp is not None else "no answer"
        filtered = resp.header("X-Consul-Results-Filtered-By-Acls") if resp is not None else None
        return (f"  {self.row} x {self.column} ({self.transport}): expected {self.expected}, "
                f"got {got}{' [filtered header: ' + filtered + ']' if filtered else ''}\n"
                f"    request: {method} {path}{' ' + body if body else ''}\n"
                + "".join(f"    - {p}\n" for p in self.problems))


class AclMatrixTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.grid = parse_matrix(MATRIX)
        # The deny server answers its half of the matrix over HTTPS.
        cls.pki_dir = tempfile.mkdtemp(prefix="tenure-acl-matrix-")
        cls.servers = {
            "deny": MatrixServer("deny", "deny", ["-acl-token-min-expiration-ttl", "1s"],
                                 pki=Pki(cls.pki_dir)),
            "allow": MatrixServer("allow", "allow", ["-acl-enable-key-list-policy"]),
        }
        try:
            for server in cls.servers.values():
                server.start()
            deny = cls.servers["deny"]
            for server in cls.servers.values():
                server.build_fixture()
            expiring = deny.admin("PUT", "/v1/acl/token", {
                "Description": "expires", "ExpirationTTL": "1s",
                "Policies": [{"ID": GLOBAL_MANAGEMENT}]})
            # Not listed once the leader deleted it; never deleted by a reset.
            deny.fixture_tokens.add(expiring["AccessorID"])
            deny.expired_accessor = expiring["AccessorID"]
            cls.expired_secret = expiring["SecretID"]
            # Wait until the server refuses it (it may take the leader a
            # moment more to delete it; both answer "ACL not found").
            poll_until(lambda: deny.request("GET", "/v1/kv/service/billing/leader",
                                            token=cls.expired_secret).status == 403,
                       timeout=15.0, message="the expired token was never refused")
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers.values():
            server.close()
        shutil.rmtree(cls.pki_dir, ignore_errors=True)

    def column_token(self, column):
        """(server, secret or None, the accessor a denial names)."""
        server_name, kind = COLUMNS[column]
        server = self.servers[server_name]
        if kind == "management":
            return server, server.management, server.management_accessor
        if kind == "anonymous":
            return server, None, ANONYMOUS_ACCESSOR
        if kind == "expired":
            return server, self.expired_secret, None
        if kind == "unknown":
            return server, str(uuid.uuid4()), None
        name = kind.split(":", 1)[1]
        return server, server.secrets[name], server.accessors[name]

    def run_cell(self, row, column, transport):
        method, path, body, permission, setup, changes, kind = REQUESTS[row]
        server, secret, accessor = self.column_token(column)
        status, listing, filtered = parse_cell(self.grid[row][column])
        values = dict(server.vars)
        values.update(server.setup(setup))
        fill = lambda text: None if text is None else re.sub(  # noqa: E731
            r"\{(\w+)\}", lambda m: str(values[m.group(1)]), text)
        request = (method, fill(path), fill(body))
        cell = Cell(row, column, transport if secret is not None else "none", request,
                    self.grid[row][column])
        try:
            resp = server.request(*request, token=secret, transport=transport)
            cell.response = resp
            self.check(cell, server, resp, status, listing, filtered, fill(permission), kind,
                       secret, accessor)
        finally:
            server.reset(changes)
        return cell

    def check(self, cell, server, resp, status, listing, filtered, permission, kind, secret,
              accessor):
        problems = cell.problems
        refused = status in ("403", "409", "nf", "boot")
        if refused and 200 <= resp.status < 300:
            cell.unauthorized = True
        policy = resp.header("X-Consul-Default-Acl-Policy")
        if policy != server.default_policy:
            problems.append(f"X-Consul-Default-Acl-Policy is {policy!r}, not "
                            f"{server.default_policy!r}")
        want_status = {"nf": 403, "boot": 403}.get(status, None) or int(status)
        if resp.status != want_status:
            problems.append(f"status {resp.status}, not {want_status}")
            return
        if status == "nf":
            if resp.text != "ACL not found":
                problems.append(f"body {resp.text!r}, not 'ACL not found'")
            return
        if status == "boot":
            if not re.fullmatch(r"Permission denied: ACL bootstrap no longer allowed "
                                r"\(reset index: \d+\)", resp.text):
                problems.append(f"body {resp.text!r} is not the bootstrap refusal")
            return
        if status == "403":
            want = permission_text(accessor, permission)
            if resp.text != want:
                problems.append(f"body {resp.text!r}, not {want!r}")
            return
        if status == "409":
            try:
                errors = resp.json()["Errors"]
                what = [e["What"] for e in errors]
            except (ValueError, KeyError, TypeError):
                problems.append(f"not a txn error answer: {resp.text!r}")
                return
            want = permission_text(accessor, permission)
            if what != [want]:
                problems.append(f"Errors {what!r}, not [{want!r}]")
            return
        # An answer the ACL check let through: what it shows.
        if kind in ("keys", "entries", "txn", "sessions"):
            header = resp.header("X-Consul-Results-Filtered-By-Acls")
            if filtered and header != "true":
                problems.append(f"X-Consul-Results-Filtered-By-Acls is {header!r}, not 'true'")
            if not filtered and header is not None:
                problems.append(f"X-Consul-Results-Filtered-By-Acls: {header!r} sent, but "
                                "nothing may have been left out for this caller")
        if listing is not None or kind in ("token", "tokens", "self"):
            self.check_shown(cell, server, resp, listing, kind, secret, accessor)
        elif kind == "true" and resp.status == 200 and resp.text != "true":
            problems.append(f"body {resp.text!r}, not true")

    def check_shown(self, cell, server, resp, listing, kind, secret, accessor):
        problems = cell.problems
        if resp.status == 404:
            if listing:
                problems.append("404 where a listing was expected")
            return
        try:
            body = resp.json()
        except ValueError:
            problems.append(f"not JSON: {resp.text!r}")
            return
        alias = {v: k for k, v in KEYS.items()}
        if kind == "keys":
            shown = [alias.get(k, k) for k in body]
        elif kind == "entries":
            shown = [alias.get(e["Key"], e["Key"]) for e in body]
        elif kind == "txn":
            shown = [alias.get(r["KV"]["Key"], r["KV"]["Key"]) for r in body["Results"] or []]
        elif kind == "sessions":
            shown = ["s" if s["Name"] == FIXTURE_SESSION else s["Name"] for s in body]
        elif kind == "self":
            if body.get("AccessorID") != accessor or body.get("SecretID") != secret:
                problems.append(f"token/self shows {body.get('AccessorID')!r}, not the "
                                f"caller's {accessor!r} with its secret")
                if body.get("AccessorID") != accessor:
                    cell.unauthorized = True
            return
        else:  # token, tokens: secret or <hidden>
            tokens = [body] if kind == "token" else body
            if kind == "tokens":
                listed = {t["AccessorID"] for t in tokens}
                missing = server.fixture_tokens - listed - {server.expired_accessor}
                if missing:
                    problems.append(f"token list leaves out {sorted(missing)}")
            hidden = listing == ["hidden"]
            for token in tokens:
                if hidden and token.get("SecretID") != "<hidden>":
                    problems.append(f"{token['AccessorID']} shows its SecretID to acl:read only")
                    cell.unauthorized = True
                if not hidden and token.get("SecretID") in (None, "<hidden>"):
                    problems.append(f"{token['AccessorID']} hides its SecretID from acl:write")
            return
        if shown != listing:
            problems.append(f"shows {shown}, not {listing}")
            if set(shown) - set(listing):
                cell.unauthorized = True

    def test_matrix(self):
        cells = []
        for i, row in enumerate(self.grid):
            for j, column in enumerate(COLUMNS):
                cells.append(self.run_cell(row, column, TRANSPORTS[(i + j) % len(TRANSPORTS)]))
        mismatched = [c for c in cells if c.problems]
        unauthorized = [c for c in cells if c.unauthorized]
        for cell in mismatched:
            sys.stdout.write(("UNAUTHORIZED " if cell.unauthorized else "MISMATCH ")
                             + cell.describe())
        summary = (f"ACL matrix: {len(cells)} cells ({len(self.grid)} requests x "
                   f"{len(COLUMNS)} token kinds), {len(cells) - len(mismatched)} matched, "
                   f"{len(mismatched)} mismatched, {len(unauthorized)} unauthorized successes")
        print(summary)
        sys.stdout.flush()
        self.assertEqual(len(unauthorized), 0, summary)
        self.assertEqual(len(mismatched), 0, summary)

    # --- beside the grid: where a token comes from, and parked queries -----------------

    def test_token_sources_in_consuls_order(self):
        """?token= first, then X-Consul-Token, then Authorization: Bearer
        (the scheme in any case); empty values are skipped and another
        scheme is no token (Consul's parseTokenInternal). The read-only
        token sent first must win over the management one sent after it."""
        deny = self.servers["deny"]
        ro, mgmt = deny.secrets["read-only"], deny.management
        refused = permission_text(deny.accessors["read-only"], "key:write service/billing/put")
        cases = [
            ("?token= before X-Consul-Token", f"?token={ro}", {"X-Consul-Token": mgmt}, refused),
            ("X-Consul-Token before Bearer", "", {"X-Consul-Token": ro,
                                                  "Authorization": "Bearer " + mgmt}, refused),
            ("an empty ?token= is skipped", "?token=", {"X-Consul-Token": ro}, refused),
            ("an empty X-Consul-Token is skipped", "", {"X-Consul-Token": "",
                                                        "Authorization": "Bearer " + ro}, refused),
            ("the Bearer scheme in any case", "", {"Authorization": "bEaReR " + ro}, refused),
            ("another scheme is no token", "", {"Authorization": "Basic " + mgmt},
             permission_text(ANONYMOUS_ACCESSOR, "key:write service/billing/put")),
        ]
        try:
            for what, query, headers, text in cases:
                resp = deny.client.request("PUT", "/v1/kv/service/billing/put" + query, "v",
                                           headers)
                self.assertEqual((resp.status, resp.text), (403, text), what)
        finally:
            deny.reset(("kv",))

    def test_parked_queries_resolve_their_token_again(self):
        """A blocking query resolves its token again when it wakes: a token
        deleted while its query was parked gets 403 "ACL not found", and a
        parked listing woken by a key the token may not read still leaves
        it out."""
        deny = self.servers["deny"]
        token = deny.admin("PUT", "/v1/acl/token", {"Description": "parked",
                                                    "Policies": [{"Name": "candidate"}]})

        def park(path, secret):
            """GET path?index=<its index now>&wait=20s on a thread of its own,
            once the server counts it parked; join() answers."""
            index = deny.request("GET", path, token=secret).header("X-Consul-Index")
            got = []
            sep = "&" if "?" in path else "?"
            thread = threading.Thread(target=lambda: got.append(deny.server.request(
                "GET", f"{path}{sep}index={index}&wait=20s", headers={"X-Consul-Token": secret},
                timeout=30)))
            thread.start()
            poll_until(lambda: int(deny.admin("GET", "/v1/agent/self")["Stats"]["tenure"]
                                   ["blocking_queries"]) >= 1, timeout=10,
                       message=f"GET {path} never parked")

            def join():
                thread.join(timeout=30)
                self.assertTrue(got, f"the parked GET {path} never answered")
                return got[0]
            return join

        try:
            answer = park("/v1/kv/service/billing/leader", token["SecretID"])
            deny.admin("DELETE", "/v1/acl/token/" + token["AccessorID"])
            deny.admin("PUT", "/v1/kv/service/billing/leader", "woken")
            got = answer()
            self.assertEqual((got.status, got.text), (403, "ACL not found"))

            answer = park("/v1/kv/service/?recurse", deny.secrets["candidate"])
            deny.admin("PUT", "/v1/kv/service/other/secret", "hidden")
            got = answer()
            self.assertEqual(got.status, 200, got.text)
            self.assertEqual([e["Key"] for e in got.json()],
                             ["service/billing/config", "service/billing/leader"])
            self.assertEqual(got.header("X-Consul-Results-Filtered-By-Acls"), "true")
        finally:
            deny.reset(("kv", "tokens"))

    def test_queued_acquires_ask_their_token_again(self):
        """Decision 0038, the cells "changed while waiting": a fair acquire
        parked in the key's queue whose token is deleted, or whose policy is
        cut to read-only, is answered 403 at once and never granted; a waiter
        whose wait ran out and whose token was deleted is never granted by a
        later release; one whose token stays valid is granted."""
        deny = self.servers["deny"]
        key = "service/billing/leader"
        tokens = {}
        for name in ("deleted", "cut", "idle", "valid"):
            tokens[name] = deny.admin("PUT", "/v1/acl/token", {
                "Description": "queued " + name, "Policies": [{"Name": "candidate"}]})
        sessions = {name: deny.admin("PUT", "/v1/session/create",
                                     {"Name": "queued-" + name, "LockDelay": "0s"})["ID"]
                    for name in ["holder", *tokens]}

        def queue():
            return [w["Session"] for w in deny.admin("GET", "/v1/tenure/queue/" + key)]

        def park(name, wait="20s"):
            got = []
            path = f"/v1/kv/{key}?acquire={sessions[name]}&queue&wait={wait}"
            thread = threading.Thread(target=lambda: got.append(deny.server.request(
                "PUT", path, b"by " + name.encode(),
                headers={"X-Consul-Token": tokens[name]["SecretID"]}, timeout=30)))
            thread.start()
            poll_until(lambda: sessions[name] in queue() or got, timeout=10,
                       message=f"{name} never queued")

            def join():
                thread.join(timeout=30)
                self.assertTrue(got, f"the queued acquire of {name} never answered")
                return got[0]
            return join

        try:
            self.assertEqual(deny.admin("PUT", f"/v1/kv/{key}?acquire={sessions['holder']}",
                                        "held"), True)
            deleted = park("deleted")
            cut = park("cut")
            idle = park("idle", wait="1ms")
            self.assertEqual(idle().header("X-Tenure-Queue-Position"), "3")
            valid = park("valid")
            self.assertEqual(queue(), [sessions[n] for n in ("deleted", "cut", "idle", "valid")])

            deny.admin("DELETE", "/v1/acl/token/" + tokens["deleted"]["AccessorID"])
            got = deleted()
            self.assertEqual((got.status, got.text), (403, "ACL not found"))
            poll_until(lambda: sessions["deleted"] not in queue(), timeout=10,
                       message="the deleted token's waiter is still queued")

            deny.admin("PUT", "/v1/acl/token/" + tokens["cut"]["AccessorID"],
                       {"Description": "cut", "Policies": [{"Name": "read-only"}]})
            got = cut()
            self.assertEqual(got.status, 403, got.text)
            self.assertEqual(got.text, "Permission denied: token with AccessorID '%s' lacks "
                             "permission 'key:write' on \"%s\"" % (tokens["cut"]["AccessorID"], key))
            poll_until(lambda: sessions["cut"] not in queue(), timeout=10,
                       message="the cut token's waiter is still queued")

            # The idle waiter has no request parked: the Store asks its token
            # at the grant, and the next in line gets the key.
            deny.admin("DELETE", "/v1/acl/token/" + tokens["idle"]["AccessorID"])
            self.assertEqual(queue(), [sessions["idle"], sessions["valid"]])
            self.assertEqual(deny.admin("PUT", f"/v1/kv/{key}?release={sessions['holder']}"),
                             True)
            got = valid()
            self.assertEqual((got.status, got.json()), (200, True), got.text)
            entry = deny.admin("GET", "/v1/kv/" + key)[0]
            self.assertEqual(entry["Session"], sessions["valid"])
            self.assertEqual(base64.b64decode(entry["Value"]), b"by valid")
            history = deny.admin("GET", "/v1/tenure/history/" + key)
            self.assertNotIn(sessions["idle"], [g["Session"] for g in history])
            self.assertNotIn(sessions["deleted"], [g["Session"] for g in history])
            self.assertNotIn(sessions["cut"], [g["Session"] for g in history])
        finally:
            deny.reset(("kv", "tokens", "sessions"))


if __name__ == "__main__":
    unittest.main()
