#!/usr/bin/python3
"""Mutual exclusion under fencing, from client histories and the server's
record of fenced writes; plus "no acknowledged write is lost". Standard
library only. See docs/checkers.md.

    from lock_checker import check_locks
    report = check_locks(recorder.history(), server_writes=writes, ttl=10.0)
    assert report.valid, report.explain()

    /usr/bin/python3 tests/lib/lock_checker.py history.jsonl [--ttl S]

Client ops (history.py format; key = the lock's KV key, session ids in args):
  create-session  ok result: the session id (or {"session": id} / {"ID": id})
  acquire         args {"session": s}; ok result: the fencing token (int) or
                  {"token": t} / {"fence": t}; ok with result False = refused
  release         args {"session": s}; the holder stops acting at invoke
  renew           args {"session": s}; ok = the session was alive; fail =
                  the client learned it was gone (at complete)
  destroy-session args {"session": s}; releases everything at invoke
  lost            args {"session": s} (key None = every lock of the session):
                  an instantaneous event, the client stopped acting as holder
  fenced-write    args {"token": t, "value": v}: a write guarded by
                  check-fence; ok = accepted, fail = refused (409)
Server record (read back at the end), one per accepted fenced write:
  {"lock": key, "token": t, "index": raft index of the write, "value": v}

Tokens are raft indexes of the granting entries (docs/fencing.md), so a grant
with token g happened at index g, and token order is grant order.

What is checked, per lock:
 (a) tokens strictly increase with grant order: a grant acknowledged before
     another was invoked has the smaller token; no token is reused.
 (b) mutual exclusion: a grant A is certainly still held (exclusive) until
     min(its release or session destroy was invoked, its session's earliest
     possible expiry + lock_delay) -- the session cannot expire before `ttl`
     after the last renewal (or creation) the client sent -- and at least
     until any of its fenced writes that the server accepted was invoked.
     A later grant B acknowledged before that is a violation. If B's grant
     only overlaps A's client-side interval [acquire ack, release invoke /
     loss] after that point, A is a "stale holder" (paused past its TTL):
     reported, not a violation, provided its writes were refused.
 (c) fencing: every write the server accepted carried the token of the
     current holder at its index: no grant with a token between the write's
     token and its index, index > token, tokens non-decreasing in index
     order; no write acknowledged to a client after a newer grant was
     acknowledged.
 (d) no acknowledged fenced write is missing from the server record, and the
     record holds nothing no client attempted (or that was refused).
"""

import bisect
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from history import FAIL, OK, History, freeze  # noqa: E402

__all__ = [
    "Finding",
    "Grant",
    "LockReport",
    "ServerWrite",
    "check_acknowledged",
    "check_file",
    "check_locks",
    "grants_from_history",
]

_INF = math.inf


class ServerWrite:
    """A fenced write as the server applied it: lock key, token, raft index, value."""

    __slots__ = ("lock", "token", "index", "value")

    def __init__(self, lock, token, index, value=None):
        self.lock = lock
        self.token = int(token)
        self.index = int(index)
        self.value = value

    @classmethod
    def of(cls, w):
        if isinstance(w, ServerWrite):
            return w
        if isinstance(w, dict):
            return cls(w["lock"], w["token"], w["index"], w.get("value"))
        return cls(*w)

    def describe(self):
        return (f"server write to lock {json.dumps(self.lock)} with token {self.token} at index {self.index}"
                f" value {json.dumps(self.value, default=repr)}")

    def __repr__(self):
        return f"<ServerWrite {self.describe()}>"


class Grant:
    """One lock grant seen by a client (an ok acquire), with what the history
    says about how long it lasted:

    client_end       when the client stopped acting as holder (release or
                     destroy invoked, loss noticed; +inf = never)
    exclusive_until  until when the lock certainly still belonged to it
    """

    def __init__(self, lock, session, process, token, op):
        self.lock = lock
        self.session = session
        self.process = process
        self.token = token
        self.op = op
        self.invoke = op.invoke
        self.ack = op.complete
        self.client_end = _INF
        self.end_reason = "held to the end of the history"
        self.exclusive_until = self.ack
        self.exclusive_reason = ""
        self._freed = _INF      # when a release/destroy of it was first invoked
        self.writes = []        # this holder's fenced-write ops
        self.reacquires = []    # ok acquires by the same session that kept the token

    def describe(self, t0=0.0):
        tok = "no token" if self.token is None else f"token {self.token}"
        return (f"grant of {json.dumps(self.lock)} to session {self.session} (p{self.process}, {tok}, "
                f"acquire #{self.op.id}) held [{self.ack - t0:.6f}, {_t(self.client_end, t0)}] by the client")

    def __repr__(self):
        return f"<Grant {self.describe()}>"


def _t(x, t0):
    return "end" if x == _INF else f"{x - t0:.6f}"


class Finding:
    """A violation, a stale holder or a warning: kind, message, involved ops/grants."""

    def __init__(self, kind, message, ops=(), grants=(), writes=()):
        self.kind = kind
        self.message = message
        self.ops = list(ops)
        self.grants = list(grants)
        self.writes = list(writes)

    def explain(self, t0=0.0):
        lines = [f"{self.kind}: {self.message}"]
        for g in self.grants:
            lines.append(f"    {g.describe(t0)}")
        for op in self.ops:
            lines.append(f"    {op.describe(t0)}")
        for w in self.writes:
            lines.append(f"    {w.describe()}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<Finding {self.kind}: {self.message}>"


class LockReport:
    """valid is True when there is no violation (stale holders and warnings
    are informational)."""

    def __init__(self, grants, violations, stale_holders, warnings, t0=0.0):
        self.grants = grants
        self.violations = violations
        self.stale_holders = stale_holders
        self.warnings = warnings
        self.t0 = t0
        self.valid = not violations

    def __bool__(self):
        return self.valid

    def kinds(self):
        """The set of violation kinds (handy in tests)."""
        return {v.kind for v in self.violations}

    def explain(self, verbose=False):
        n = sum(len(g) for g in self.grants.values())
        lines = [f"{len(self.grants)} locks, {n} grants: "
                 + ("mutual exclusion and fencing hold" if self.valid else f"{len(self.violations)} VIOLATIONS")
                 + f"; {len(self.stale_holders)} stale holders, {len(self.warnings)} warnings"]
        for f in self.violations:
            lines.append("  " + f.explain(self.t0).replace("\n", "\n  "))
        if verbose or self.valid:
            for f in self.stale_holders + self.warnings:
                lines.append("  " + f.explain(self.t0).replace("\n", "\n  "))
        return "\n".join(lines)

    def __repr__(self):
        return f"<LockReport valid={self.valid} violations={len(self.violations)}>"


def _session_of(op):
    a = op.args
    if isinstance(a, dict):
        return a.get("session", a.get("Session"))
    return a


def _created_session(op):
    r = op.result
    if isinstance(r, dict):
        return r.get("session", r.get("ID", r.get("id")))
    return r


def _token_of(op):
    r = op.result
    if isinstance(r, dict):
        for k in ("token", "fence", "Fence"):
            if k in r:
                return None if r[k] is None else int(r[k])
        return None
    if isinstance(r, bool) or r is None:
        return None
    return int(r)


def _granted(op):
    return op.outcome == OK and op.result is not False


def _write_token(op):
    a = op.args
    if isinstance(a, dict) and a.get("token", a.get("fence")) is not None:
        return int(a.get("token", a.get("fence")))
    if isinstance(a, (list, tuple)) and len(a) == 2:
        return int(a[0])
    raise ValueError(f"fenced-write needs args {{'token': t, 'value': v}}: {op.describe()}")


def _write_value(op):
    a = op.args
    if isinstance(a, dict):
        return a.get("value")
    return a[1]


def grants_from_history(history, ttl=None, lock_delay=0.0):
    """{lock: [Grant]} sorted by (token, ack), with client_end and
    exclusive_until computed (see the module doc). ttl None or 0: only
    explicit evidence (renewals' and writes' invocations) extends a grant."""
    ttl = ttl or 0.0
    ops = sorted(history, key=lambda op: op.invoke)
    alive_lb = {}        # session -> the session certainly existed until then

    def alive(s, t):
        if t > alive_lb.get(s, -_INF):
            alive_lb[s] = t

    ends = {}            # session -> [(time, lock or None, reason, frees_lock)]
    grants = {}
    by_key = {}          # (lock, session, token) -> Grant
    # Releases and destroys whose answer was not seen: they may never have
    # been applied, so a later acquire by the same session that gets the same
    # token is the old grant still held (a fresh grant would have a new index).
    unconfirmed = set()
    for op in ops:
        t = op.type
        if t == "create-session" and op.outcome == OK:
            alive(_created_session(op), op.invoke + ttl)
        elif t == "renew":
            s = _session_of(op)
            if op.outcome == OK:
                alive(s, op.invoke + ttl)
            elif op.outcome == FAIL:
                ends.setdefault(s, []).append((op.complete, None, f"renew #{op.id} failed", False))
        elif t == "release":
            ends.setdefault(_session_of(op), []).append((op.invoke, op.key, f"release #{op.id} invoked", True))
            if op.outcome != OK:
                unconfirmed.add(op.id)
        elif t == "destroy-session":
            ends.setdefault(_session_of(op), []).append((op.invoke, None, f"destroy #{op.id} invoked", True))
            if op.outcome != OK:
                unconfirmed.add(op.id)
        elif t == "lost":
            ends.setdefault(_session_of(op), []).append((op.invoke, op.key, f"loss #{op.id} noticed", False))
        elif t == "acquire" and _granted(op):
            s = _session_of(op)
            alive(s, op.invoke)
            token = _token_of(op)
            k = (op.key, s, token)
            g = by_key.get(k) if token is not None else None
            if g is not None and not any(frees and g.invoke <= when < op.invoke and key in (None, op.key)
                                         and _end_op_id(reason) not in unconfirmed
                                         for (when, key, reason, frees) in ends.get(s, ())):
                g.reacquires.append(op)  # a re-acquire while holding keeps the token
                continue
            g = Grant(op.key, s, op.process, token, op)
            by_key[k] = g
            grants.setdefault(op.key, []).append(g)
    # client_end and the release bound of every grant
    for lock, gs in grants.items():
        for g in gs:
            freed = _INF
            for (when, key, reason, frees) in ends.get(g.session, ()):
                if when < g.invoke or (key is not None and key != lock):
                    continue
                if when < g.client_end:
                    g.client_end, g.end_reason = when, reason
                if frees and when < freed:
                    freed = when
            g._freed = freed
    # fenced writes belong to the grant with their token
    by_token = {}
    for lock, gs in grants.items():
        for g in gs:
            if g.token is not None:
                by_token.setdefault((lock, g.token), []).append(g)
    for op in ops:
        if op.type == "fenced-write":
            for g in by_token.get((op.key, _write_token(op)), ()):
                g.writes.append(op)
    for lock, gs in grants.items():
        for g in gs:
            a = alive_lb.get(g.session, g.invoke)
            exp = a + lock_delay
            if g._freed <= exp:
                until, why = g._freed, "its release/destroy was invoked only then"
            else:
                until, why = exp, (f"its session cannot have expired before (last renewal/creation sent "
                                   f"+ ttl {ttl:g} s + lock_delay {lock_delay:g} s)")
            held = [w.invoke for w in g.writes if w.outcome == OK]
            if held and max(held) > until:
                until, why = max(held), "a fenced write of it invoked then was accepted"
            g.exclusive_until = until
            g.exclusive_reason = why
        gs.sort(key=lambda g: (g.token if g.token is not None else _INF, g.ack))
    return grants


def _end_op_id(reason):
    """The op id in an end's reason text ("release #12 invoked")."""
    try:
        return int(reason.split("#", 1)[1].split()[0])
    except (IndexError, ValueError):
        return None


def check_locks(history, server_writes=None, ttl=None, lock_delay=0.0):
    """Check lock histories (see the module doc). history: a History or ops
    (non-lock ops are ignored); server_writes: None (skip the server-side
    checks) or a list of ServerWrite / {"lock","token","index","value"};
    ttl: the server's guaranteed minimum session lifetime after a renewal
    (tenure: the session TTL); lock_delay: the session's lock-delay if the
    server honours it (a lock lost by expiry is not re-granted before it).
    Returns a LockReport."""
    ops = list(history)
    t0 = min((op.invoke for op in ops), default=0.0)
    grants = grants_from_history(ops, ttl=ttl, lock_delay=lock_delay)
    violations, stale, warnings = [], [], []
    for lock, gs in grants.items():
        _check_tokens(lock, gs, violations, warnings)
        _check_exclusion(lock, gs, violations, stale, t0)
    _check_client_writes(ops, grants, violations, t0)
    if server_writes is not None:
        _check_server_writes(ops, grants, [ServerWrite.of(w) for w in server_writes], violations, warnings)
    return LockReport(grants, violations, stale, warnings, t0)


def _check_tokens(lock, gs, violations, warnings):
    with_token = [g for g in gs if g.token is not None]
    for g in gs:
        if g.token is None:
            warnings.append(Finding("no-token", "an acquire succeeded without a fencing token", grants=[g]))
        elif g.token <= 0:
            violations.append(Finding("bad-token", f"fencing token {g.token} is not positive", grants=[g]))
    # equal tokens for different grants
    seen = {}
    for g in with_token:
        other = seen.get(g.token)
        if other is not None:
            violations.append(Finding("token-reused", f"two grants of {json.dumps(lock)} share token {g.token}",
                                      grants=[other, g]))
        else:
            seen[g.token] = g
    # a grant acknowledged before another was invoked must have the smaller token
    by_ack = sorted(with_token, key=lambda g: g.ack)
    by_inv = sorted(with_token, key=lambda g: g.invoke)
    best = None
    k = 0
    for b in by_inv:
        while k < len(by_ack) and by_ack[k].ack < b.invoke:
            a = by_ack[k]
            if best is None or a.token > best.token:
                best = a
            k += 1
        if best is not None and best.token > b.token:
            violations.append(Finding(
                "token-order", f"token {b.token} was granted after token {best.token} had been acknowledged "
                "(tokens must strictly increase with grant order)", grants=[best, b]))


def _order(a, b):
    """(earlier, later, how we know) for two grants of one lock, or None if unknown."""
    if a.token is not None and b.token is not None:
        if a.token == b.token:
            return None  # reported as token-reused
        return (a, b, "by token") if a.token < b.token else (b, a, "by token")
    if a.ack < b.invoke:
        return a, b, "in real time"
    if b.ack < a.invoke:
        return b, a, "in real time"
    return None


def _check_exclusion(lock, gs, violations, stale, t0):
    name = json.dumps(lock)
    position = {id(g): n for n, g in enumerate(gs)}
    by_ack = sorted(gs, key=lambda g: g.ack)
    acks = [g.ack for g in by_ack]
    for a in gs:
        # only grants acknowledged before a's horizon can conflict with it
        horizon = max(a.exclusive_until, a.client_end)
        first_stale = None
        for b in by_ack[:bisect.bisect_left(acks, horizon)]:
            if b is a:
                continue
            o = _order(a, b)
            if o is None:
                if (a.token is None or b.token is None) and position[id(a)] < position[id(b)] \
                        and b.ack < a.exclusive_until and a.ack < b.exclusive_until:
                    # order unknown: a violation only if it is one either way
                    violations.append(Finding(
                        "two-holders", f"two concurrent grants of {name} without tokens, each acknowledged "
                        "while the other was certainly still held", grants=[a, b]))
                continue
            if o[0] is not a:
                continue
            how = o[2]
            if b.ack < a.exclusive_until:
                violations.append(Finding(
                    "two-holders", f"a later grant of {name} ({how}) was acknowledged at {_t(b.ack, t0)} while "
                    f"the earlier one was certainly held until {_t(a.exclusive_until, t0)}: {a.exclusive_reason}",
                    grants=[a, b]))
            elif b.ack < a.client_end and first_stale is None:
                first_stale = b
        if first_stale is not None:
            b = first_stale
            late = [w for w in a.writes if w.invoke >= b.ack]
            refused = [w for w in late if w.outcome == FAIL]
            stale.append(Finding(
                "stale-holder", f"the client of the earlier grant of {name} acted as holder until "
                f"{_t(a.client_end, t0)} ({a.end_reason}), after the later grant acknowledged at {_t(b.ack, t0)} "
                f"(its session may have expired from {_t(a.exclusive_until, t0)}); {len(refused)} of its "
                f"{len(late)} writes sent after the new grant were refused", grants=[a, b], ops=late))


def _check_client_writes(ops, grants, violations, t0):
    """An ok fenced write invoked after a newer grant was acknowledged."""
    acks = {}
    for lock, gs in grants.items():
        acks[lock] = sorted((g.ack, g.token, g) for g in gs if g.token is not None)
    for op in ops:
        if op.type != "fenced-write" or op.outcome != OK:
            continue
        t = _write_token(op)
        for ack, token, g in acks.get(op.key, ()):
            if ack >= op.invoke:
                break
            if token > t:
                violations.append(Finding(
                    "stale-write-accepted", f"a write with token {t} was accepted although the grant with token "
                    f"{token} had been acknowledged at {_t(ack, t0)}, before the write was sent",
                    ops=[op], grants=[g]))
                break


def _check_server_writes(ops, grants, writes, violations, warnings):
    tokens = {lock: sorted(g.token for g in gs if g.token is not None) for lock, gs in grants.items()}
    by_lock = {}
    for w in writes:
        by_lock.setdefault(w.lock, []).append(w)
        known = tokens.get(w.lock, [])
        i = bisect.bisect_left(known, w.token)
        if i == len(known) or known[i] != w.token:
            warnings.append(Finding("unknown-token", "the server accepted a write with a token no client "
                                    "was seen to be granted", writes=[w]))
        if w.index <= w.token:
            violations.append(Finding("write-before-grant", "a fenced write applied at an index not after its "
                                      "token's grant", writes=[w]))
        j = bisect.bisect_right(known, w.token)
        if j < len(known) and known[j] < w.index:
            violations.append(Finding(
                "fenced-write-after-newer-grant", f"the server accepted a write with token {w.token} at index "
                f"{w.index}, after the lock was granted with token {known[j]} (at index {known[j]})",
                writes=[w]))
    for lock, ws in by_lock.items():
        ws = sorted(ws, key=lambda w: w.index)
        for p, q in zip(ws, ws[1:]):
            if q.token < p.token:
                violations.append(Finding(
                    "token-regressed", f"a write with token {q.token} was applied after one with token {p.token}",
                    writes=[p, q]))
    # (d) acknowledged writes present, nothing unexplained present
    applied = {}
    for w in writes:
        applied.setdefault((freeze(w.lock), w.token, freeze(w.value)), []).append(w)
    attempted = {}
    for op in ops:
        if op.type != "fenced-write":
            continue
        k = (freeze(op.key), _write_token(op), freeze(_write_value(op)))
        attempted.setdefault(k, []).append(op)
        if op.outcome == OK and k not in applied:
            violations.append(Finding("lost-write", "an acknowledged fenced write is missing from the server's "
                                      "record", ops=[op]))
    for k, ws in applied.items():
        tries = attempted.get(k, [])
        if not tries:
            violations.append(Finding("phantom-write", "the server's record holds a write no client sent",
                                      writes=ws))
        elif all(op.outcome == FAIL for op in tries):
            violations.append(Finding("refused-write-applied", "a write the server refused is in its record",
                                      ops=tries, writes=ws))


def check_acknowledged(acked, final, attempted=None, what="write"):
    """The generic "no acknowledged write is lost" check for set-like data
    (unique keys or values written once each): every acknowledged item must be
    in `final` (what was read back at the end); with `attempted` (acked plus
    indeterminate ones), every final item must have been attempted. Returns a
    list of Findings ("lost-write", "phantom-write"), empty when fine."""
    final = set(map(freeze, final))
    out = []
    for item in acked:
        if freeze(item) not in final:
            out.append(Finding("lost-write", f"acknowledged {what} {json.dumps(item, default=repr)} is missing"))
    if attempted is not None:
        tried = set(map(freeze, attempted)) | set(map(freeze, acked))
        for item in sorted(final - tried, key=repr):
            out.append(Finding("phantom-write", f"{what} {json.dumps(item, default=repr)} is present but was "
                               "never attempted"))
    return out


def check_file(path, **kwargs):
    """check_locks on a saved history, taking server_writes, ttl and
    lock_delay from its metadata unless given."""
    h = History.load(path)
    for name in ("server_writes", "ttl", "lock_delay"):
        if name not in kwargs and name in h.meta:
            kwargs[name] = h.meta[name]
    return check_locks(h, **kwargs)


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(description="Check a saved JSON-lines history of lock ops for mutual "
                                "exclusion under fencing (see docs/checkers.md). Metadata 'server_writes', "
                                "'ttl', 'lock_delay' are used when present. Exit 0 fine, 1 violations, 3 bad input.")
    p.add_argument("history")
    p.add_argument("--ttl", type=float, help="minimum session lifetime after a renewal, seconds")
    p.add_argument("--lock-delay", type=float, help="lock-delay honoured after an expiry, seconds")
    p.add_argument("-v", "--verbose", action="store_true", help="also list stale holders and warnings")
    a = p.parse_args(argv)
    kwargs = {}
    if a.ttl is not None:
        kwargs["ttl"] = a.ttl
    if a.lock_delay is not None:
        kwargs["lock_delay"] = a.lock_delay
    try:
        report = check_file(a.history, **kwargs)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    print(report.explain(verbose=a.verbose))
    return 0 if report.valid else 1


if __name__ == "__main__":
    sys.exit(main())
