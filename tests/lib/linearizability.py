#!/usr/bin/python3
"""Linearizability checker for KV registers (read / write / cas / delete),
standard library only. See docs/checkers.md.

    from linearizability import check_history
    result = check_history(recorder.history(), final={"k": "v9"})
    assert result.valid is True, result.explain()

    /usr/bin/python3 tests/lib/linearizability.py history.jsonl   # re-check a saved one

Each key is an independent register (linearizability is compositional), so
the history is partitioned by key and every key is checked on its own.

Model, per key: the value (None = absent). An "ok" read returns the value; an
"ok" write sets it; an "ok" cas [old, new] needs value == old and sets new
("ok" with result False counts as a refused cas); delete is write(None).
"fail" ops never happened and are dropped; with cas_fail_is_read=True a cas
that failed with result False is kept as an observation "value != old".
"info" (and pending) ops may take effect at any time after their invocation,
or never: their completion is +infinity and they are optional. Optional ops
need never be placed, since placing them after everything is invisible (an
info cas that would not succeed there is simply "never").

Algorithm: Wing & Gong's search with Lowe's memoization, as in Knossos' WGL
and Porcupine. Calls and returns of the ops, sorted by time, form a doubly
linked list; the search repeatedly linearizes the earliest call whose model
step is legal and whose (linearized set, value) configuration was not seen
before, lifting the call and its return out of the list; reaching a return
whose op is not linearized means backtracking. Success once every required
op is placed. The cache key compresses the linearized set to (length of its
all-linearized prefix in invocation order, the bits above it, the optional
ops' bits), so it stays small whatever the history length.

Two reductions before the search, both exact (they change no verdict), for
the common case of unique written values:
  - an optional op whose new value is never observed (no ok read returns it,
    no cas expects it) can never help and is dropped;
  - an optional op that is the only writer of a value v (v not the initial
    value) that some required op observes must precede every such observer,
    so it becomes required with its return at the earliest observer's return.

Bound: at most `max_states` configurations (and `time_limit` seconds) per
key; beyond that the answer is "unknown", never a hang.

On failure the result names the op that could not be placed (the earliest
return no configuration got past: the history up to just before it is
linearizable), the register values possible when it had to take effect, the
longest linearization found and the ops concurrent with it.
"""

import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from history import FAIL, INFO, OK, History, Op, freeze  # noqa: E402

__all__ = [
    "DEFAULT_MAX_STATES",
    "REGISTER_TYPES",
    "UNKNOWN",
    "CheckResult",
    "HistoryResult",
    "LostWrite",
    "brute_force_register",
    "check_file",
    "check_final_state",
    "check_history",
    "check_register",
]

UNKNOWN = "unknown"
DEFAULT_MAX_STATES = 1_000_000
REGISTER_TYPES = ("read", "get", "write", "put", "cas", "delete")

_READ, _WRITE, _CAS, _NCAS = 0, 1, 2, 3
_INF = math.inf


class _ROp:
    """An op normalized for the register model."""

    __slots__ = ("kind", "a", "b", "inv", "ret", "required", "op", "bit", "pinned", "pinned_by")

    def __init__(self, kind, a, b, inv, ret, required, op):
        self.kind = kind
        self.a = a          # read: value read; write: value; cas/ncas: old
        self.b = b          # cas: new
        self.inv = inv
        self.ret = ret
        self.required = required
        self.op = op
        self.bit = 0
        self.pinned = False     # an info op made required by _reduce ...
        self.pinned_by = None   # ... because this op observed its value

    @property
    def new_value(self):
        return self.a if self.kind == _WRITE else self.b

    def writes(self):
        return self.kind == _WRITE or self.kind == _CAS


def _cas_args(op):
    a = op.args
    if isinstance(a, dict):
        old = a.get("old", a.get("expected"))
        new = a.get("new", a.get("value"))
        return freeze(old), freeze(new)
    if isinstance(a, (list, tuple)) and len(a) == 2:
        return freeze(a[0]), freeze(a[1])
    raise ValueError(f"cas op needs args [old, new] or {{'old':..,'new':..}}: {op.describe()}")


def _normalize(ops, cas_fail_is_read):
    """-> list of _ROp (dropping what cannot matter: failed ops, unknown reads)."""
    out = []
    for op in ops:
        t, st = op.type, op.status
        if t in ("read", "get"):
            if st == OK:
                out.append(_ROp(_READ, freeze(op.result), None, op.invoke, op.complete, True, op))
        elif t in ("write", "put", "delete"):
            v = None if t == "delete" else freeze(op.args)
            if st == OK:
                out.append(_ROp(_WRITE, v, None, op.invoke, op.complete, True, op))
            elif st == INFO:
                out.append(_ROp(_WRITE, v, None, op.invoke, _INF, False, op))
        elif t == "cas":
            old, new = _cas_args(op)
            refused = st == FAIL or (st == OK and op.result is False)
            if refused:
                if cas_fail_is_read and op.result is False:
                    out.append(_ROp(_NCAS, old, None, op.invoke, op.complete, True, op))
            elif st == OK:
                out.append(_ROp(_CAS, old, new, op.invoke, op.complete, True, op))
            else:
                out.append(_ROp(_CAS, old, new, op.invoke, _INF, False, op))
        else:
            raise ValueError(f"not a register op (types {REGISTER_TYPES}): {op.describe()}")
        r = out[-1] if out and out[-1].op is op else None
        if r is not None and r.required and (op.complete is None or op.complete < op.invoke):
            raise ValueError(f"a completed op without a valid completion time: {op.describe()}")
    return out


def _reduce(rops, initial):
    """Drop optional ops that can never matter; pin optional sole writers of
    observed values (see the module doc). Returns (kept, dropped)."""
    if any(r.kind == _NCAS for r in rops):
        return rops, []
    observed = set()
    for r in rops:
        if (r.kind == _READ and r.required) or r.kind == _CAS:
            observed.add(r.a)
    kept, dropped = [], []
    for r in rops:
        if not r.required and r.new_value not in observed:
            dropped.append(r)
        else:
            kept.append(r)
    writers = {}
    for r in kept:
        if r.writes():
            writers.setdefault(r.new_value, []).append(r)
    first_observer = {}
    for r in kept:
        if r.required and (r.kind == _READ or r.kind == _CAS):
            prev = first_observer.get(r.a)
            if prev is None or r.ret < prev.ret:
                first_observer[r.a] = r
    for r in kept:
        if r.required:
            continue
        v = r.new_value
        obs = first_observer.get(v)
        if obs is not None and v != initial and len(writers[v]) == 1 and obs.ret >= r.inv:
            r.required = True
            r.pinned = True
            r.pinned_by = obs
            r.ret = obs.ret
    return kept, dropped


class CheckResult:
    """The verdict for one register (key).

    valid        True, False or "unknown" (the bound was hit)
    key          the key
    op           the Op that could not be placed (invalid) or None
    states       the register values possible when `op` had to take effect
    linearized   the longest legal order found, as a list of (Op, value after)
    concurrent   the ops whose intervals overlap `op`'s
    reason       one line on why (or why unknown)
    steps, elapsed, n_ops (checked), n_dropped (optional ops that cannot matter)
    """

    def __init__(self, key, valid, steps, elapsed, n_ops, n_dropped=0, n_pinned=0, op=None,
                 states=(), linearized=(), concurrent=(), reason="", t0=0.0, progress=None):
        self.key = key
        self.valid = valid
        self.steps = steps
        self.elapsed = elapsed
        self.n_ops = n_ops
        self.n_dropped = n_dropped
        self.n_pinned = n_pinned
        self.op = op
        self.states = list(states)
        self.linearized = list(linearized)
        self.concurrent = list(concurrent)
        self.reason = reason
        self.t0 = t0
        self.progress = progress

    def __bool__(self):
        return self.valid is True

    def explain(self, t0=None, max_lines=12):
        t0 = self.t0 if t0 is None else t0
        verdict = {True: "linearizable", False: "NOT linearizable", UNKNOWN: "UNKNOWN"}[self.valid]
        lines = [f"key {json.dumps(self.key, default=repr)}: {verdict} ({self.n_ops} ops, "
                 f"{self.n_dropped} irrelevant info ops dropped, {self.n_pinned} info ops pinned; "
                 f"{self.steps} states in {self.elapsed:.3f} s)"]
        if self.reason:
            lines.append(f"  {self.reason}")
        if self.op is not None:
            lines.append(f"  cannot place: {self.op.describe(t0)}")
            if self.states:
                shown = ", ".join(_show(s) for s in self.states[:max_lines])
                more = "" if len(self.states) <= max_lines else f" (+{len(self.states) - max_lines} more)"
                lines.append(f"  values the register could hold when it had to take effect: {shown}{more}")
        if self.linearized:
            n = len(self.linearized)
            lines.append(f"  longest linearization found ({n} ops"
                         + (f", last {max_lines} shown" if n > max_lines else "") + "):")
            for op, value in self.linearized[-max_lines:]:
                lines.append(f"    {op.describe(t0)}   => {_show(value)}")
        if self.concurrent:
            n = len(self.concurrent)
            lines.append(f"  concurrent with it ({n} ops" + (f", first {max_lines} shown" if n > max_lines else "")
                         + "):")
            for op in self.concurrent[:max_lines]:
                lines.append(f"    {op.describe(t0)}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<CheckResult key={self.key!r} valid={self.valid}>"


def _show(v):
    return json.dumps(_thaw(v), default=repr)


def _thaw(v):
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    return v


def check_register(ops, initial=None, max_states=DEFAULT_MAX_STATES, time_limit=None,
                   cas_fail_is_read=False, key=None, reduce=True):
    """Check the ops of ONE register (read/write/cas/delete; all other types
    raise ValueError) for linearizability. `initial` is the value before the
    first op (None = absent). Returns a CheckResult."""
    start = time.monotonic()
    ops = list(ops)
    t0 = min((op.invoke for op in ops), default=0.0)
    initial = freeze(initial)
    rops = _normalize(ops, cas_fail_is_read)
    dropped = []
    if reduce:
        rops, dropped = _reduce(rops, initial)
    n_pinned = sum(r.pinned for r in rops)
    deadline = None if time_limit is None else start + time_limit
    valid, steps, best = _search(rops, initial, max_states, deadline)
    elapsed = time.monotonic() - start
    common = dict(key=key, steps=steps, elapsed=elapsed, n_ops=len(rops), n_dropped=len(dropped),
                  n_pinned=n_pinned, t0=t0)
    if valid is True:
        return CheckResult(valid=True, **common)
    pos_op, states, stack, progress = best
    linearized = []
    for r, value in stack:
        linearized.append((r.op, value))
    if valid == UNKNOWN:
        reason = (f"gave up after {steps} states / {elapsed:.1f} s (max_states={max_states}, "
                  f"time_limit={time_limit}); got as far as {progress:.0%} of the history's returns")
        return CheckResult(valid=UNKNOWN, reason=reason, linearized=linearized, progress=progress, **common)
    bad = pos_op
    if bad.pinned:
        # blame the observer rather than the info op that had to precede it
        bad = bad.pinned_by
    # completed ops first (info ops pending since long ago overlap everything)
    near = sorted((r for r in rops if r is not bad and r.inv <= bad.ret and r.ret >= bad.inv),
                  key=lambda r: (r.ret == _INF, r.inv))
    concurrent = [r.op for r in near]
    return CheckResult(valid=False, op=bad.op, states=sorted(states, key=_sort_key), linearized=linearized,
                       concurrent=concurrent, reason=_reason(bad, rops, states, initial),
                       progress=progress, **common)


def _sort_key(v):
    return (v is not None, type(v).__name__, repr(v))


def _reason(bad, rops, states, initial):
    if bad.kind in (_READ, _CAS):
        what = "read" if bad.kind == _READ else "cas expected"
        v = bad.a
        writers = [r for r in rops if r.writes() and r.new_value == v]
        if v != initial and not writers:
            return f"it {what} {_show(v)}, a value no operation ever wrote"
        if v != initial and all(w.inv > bad.ret for w in writers):
            return (f"it {what} {_show(v)}, which was written only by operations invoked after it "
                    f"completed (a read from the future)")
        if v not in states:
            return (f"it {what} {_show(v)}, which the register could not hold when it had to take effect "
                    "(a stale or lost value)")
    if bad.kind == _WRITE:
        return "a write that cannot be ordered with the operations around it"
    if bad.kind == _NCAS:
        return f"a cas refused (value != {_show(bad.a)}) when the register could only hold {_show(bad.a)}"
    return "no legal position for it given the operations that completed before it"


def _search(rops, initial, max_states, deadline):
    """WGL search. Returns (valid, steps, best) with best = (blocking _ROp,
    set of values, [(_ROp, value after)] longest linearization, progress).

    Required ops live in the doubly linked list of calls and returns.
    Optional (info) ops have no return, so they are kept apart and tried
    only after the required candidates of a configuration, when the scan
    reaches the first return: every op invoked before that return may be
    linearized next. A configuration is (required set, optional set, value)."""
    rops = sorted(rops, key=lambda r: r.inv)
    n_req = n_opt = 0
    for r in rops:
        if r.required:
            r.bit = 1 << n_req
            n_req += 1
        else:
            r.bit = 1 << n_opt
            n_opt += 1
    if n_req == 0:
        return True, 0, None
    events = []
    for i, r in enumerate(rops):
        events.append((r.inv, 0, i))
        if r.required:
            events.append((r.ret, 1, i))
    events.sort()  # at equal times calls first: touching intervals count as concurrent
    m = len(events)
    # Node 0 is the head, event k is node k + 1 (so node order is time order);
    # only required ops' nodes are linked; -1 ends the list.
    nxt = [-1] * (m + 1)
    prv = [-1] * (m + 1)
    is_call = [False] * (m + 1)
    node_op = [-1] * (m + 1)
    ret_node = [-1] * len(rops)
    opt_ops = []        # optional ops in invocation order
    opt_call = []       # ... and their call nodes
    last = 0
    for k, (_, kind, i) in enumerate(events):
        node = k + 1
        node_op[node] = i
        if kind == 0:
            is_call[node] = True
            if not rops[i].required:
                opt_ops.append(i)
                opt_call.append(node)
                continue
        else:
            ret_node[i] = node
        nxt[last] = node
        prv[node] = last
        last = node
    n_optl = len(opt_ops)
    # Identical optional ops are interchangeable (the earlier-invoked one can
    # stand in for a later one anywhere), so only the earliest unplaced one of
    # each kind is tried: 2^n sets of info ops become prod(count + 1).
    same_prev = [0] * len(rops)
    last_of_kind = {}
    for i in opt_ops:
        r = rops[i]
        sig = (r.kind, r.a, r.b)
        same_prev[i] = last_of_kind.get(sig, 0)
        last_of_kind[sig] = r.bit
    kinds = [r.kind for r in rops]
    aa = [r.a for r in rops]
    bb = [r.b for r in rops]
    bits = [r.bit for r in rops]

    state = initial
    lin_req = 0
    lin_opt = 0
    remaining = n_req
    # stack entries: (required call node or -1, optional index j, return node
    # the optional scan was bounded by, value, lin_req, lin_opt)
    stack = []
    cache = set()
    steps = 0
    best_pos = -1
    best_states = set()
    best_stack = []
    entry = nxt[0]
    j = -1              # -1: scanning required calls; >= 0: scanning optional ops
    check_every = 4096
    while True:
        if remaining == 0:
            return True, steps, None
        if j < 0:
            if is_call[entry]:
                i = node_op[entry]
            else:
                # the return of a required op not linearized yet: past here no
                # op can go before it; try the optional ops invoked so far
                if entry > best_pos:
                    best_pos = entry
                    best_states = {state}
                    best_stack = [(s[0], s[1], s[3]) for s in stack]
                    best_stack.append((-1, -1, state))
                elif entry == best_pos:
                    best_states.add(state)
                j = 0
                i = -1
        if j >= 0:
            i = -1
            while j < n_optl and opt_call[j] < entry:
                o = opt_ops[j]
                if not (lin_opt & bits[o]) and (same_prev[o] & ~lin_opt) == 0:
                    i = o
                    break
                j += 1
            if i < 0:
                # every candidate tried: this configuration is dead, backtrack
                if not stack:
                    return False, steps, _best(rops, node_op, opt_ops, best_pos, best_states, best_stack,
                                               None, m, state)
                call, pj, ret_bound, state, lin_req, lin_opt = stack.pop()
                if call >= 0:
                    rn = ret_node[node_op[call]]
                    nxt[prv[rn]] = rn
                    if nxt[rn] != -1:
                        prv[nxt[rn]] = rn
                    remaining += 1
                    nxt[prv[call]] = call
                    if nxt[call] != -1:
                        prv[nxt[call]] = call
                    entry = nxt[call]
                    j = -1
                else:
                    entry = ret_bound
                    j = pj + 1
                continue
        k = kinds[i]
        if k == _READ:
            legal = state == aa[i]
            new = state
        elif k == _WRITE:
            legal = True
            new = aa[i]
        elif k == _CAS:
            legal = state == aa[i]
            new = bb[i]
        else:
            legal = state != aa[i]
            new = state
        if legal:
            if j < 0:
                nreq = lin_req | bits[i]
                nopt = lin_opt
            else:
                nreq = lin_req
                nopt = lin_opt | bits[i]
            f = (~nreq & (nreq + 1)).bit_length() - 1
            ckey = (f, nreq >> f, nopt, new)
            if ckey not in cache:
                cache.add(ckey)
                steps += 1
                if steps % check_every == 0 or steps >= max_states:
                    if steps >= max_states or (deadline is not None and time.monotonic() > deadline):
                        return UNKNOWN, steps, _best(rops, node_op, opt_ops, best_pos, best_states, best_stack,
                                                     stack, m, state)
                if j < 0:
                    stack.append((entry, -1, -1, state, lin_req, lin_opt))
                    # lift the call and its return out of the list
                    p, q = prv[entry], nxt[entry]
                    nxt[p] = q
                    if q != -1:
                        prv[q] = p
                    rn = ret_node[i]
                    p, q = prv[rn], nxt[rn]
                    nxt[p] = q
                    if q != -1:
                        prv[q] = p
                    remaining -= 1
                else:
                    stack.append((-1, j, entry, state, lin_req, lin_opt))
                state, lin_req, lin_opt = new, nreq, nopt
                entry = nxt[0]
                j = -1
                continue
        if j < 0:
            entry = nxt[entry]
        else:
            j += 1


def _best(rops, node_op, opt_ops, best_pos, best_states, best_stack, live_stack, m, live_state):
    """(blocking op, states, [(op, value after)], progress) for the report."""
    if live_stack is not None and len(live_stack) + 1 > len(best_stack):
        best_stack = [(s[0], s[1], s[3]) for s in live_stack] + [(-1, -1, live_state)]
    order = []
    # best_stack holds (required call node, optional index, value before); the
    # value after item j is the value before item j + 1
    for n in range(len(best_stack) - 1):
        call, oj, _ = best_stack[n]
        r = rops[node_op[call]] if call >= 0 else rops[opt_ops[oj]]
        order.append((r, best_stack[n + 1][2]))
    blocking = rops[node_op[best_pos]] if best_pos > 0 else None
    progress = best_pos / m if best_pos > 0 else 0.0
    return blocking, best_states, order, progress


class LostWrite:
    """An acknowledged write missing from the final state (or a final value
    nobody wrote, with op None)."""

    def __init__(self, key, op, final, reason):
        self.key = key
        self.op = op
        self.final = final
        self.reason = reason

    def explain(self, t0=0.0):
        what = self.op.describe(t0) if self.op is not None else "(no op)"
        return f"key {json.dumps(self.key, default=repr)}: {self.reason}: {what}; final value {_show(self.final)}"

    def __repr__(self):
        return f"<LostWrite {self.explain()}>"


def check_final_state(history, final, initial=None, initial_by_key=None, types=REGISTER_TYPES):
    """The direct "no acknowledged write is lost" check for KV registers.

    `final` maps key -> value read back at the end, after every client
    stopped (a key of the history missing from it counts as absent, None).
    An ok write/cas/delete that no other non-failed write could follow (each
    other one completed before it was invoked) was the last write of its key,
    so the final value must be its value. A final value that no op wrote
    (and that is not the initial value) is reported as a phantom.
    Returns a list of LostWrite (empty = fine)."""
    initial_by_key = initial_by_key or {}
    out = []
    for key, ops in _by_key(history, types).items():
        fin = freeze(final.get(key)) if key in final else None
        writes = []
        for r in _normalize(ops, False):
            if r.writes():
                writes.append(r)
        for w in writes:
            if not w.required:
                continue
            followers = [o for o in writes if o is not w and o.ret >= w.inv]
            if not followers and w.new_value != fin:
                out.append(LostWrite(key, w.op, fin, "the last acknowledged write is not in the final state"))
        init = freeze(initial_by_key.get(key, initial))
        if fin != init and not any(w.new_value == fin for w in writes):
            out.append(LostWrite(key, None, fin, "the final value was never written"))
    return out


def _by_key(history, types):
    out = {}
    for op in history:
        if op.type in types:
            out.setdefault(freeze(op.key), []).append(op)
    return out


class HistoryResult:
    """The verdict for a whole history: valid is False if any key is not
    linearizable or an acknowledged write is lost, "unknown" if some key hit
    the bound (and none failed), else True."""

    def __init__(self, results, lost_writes=(), t0=0.0):
        self.results = results
        self.lost_writes = list(lost_writes)
        self.t0 = t0
        verdicts = [r.valid for r in results.values()]
        if self.lost_writes or False in verdicts:
            self.valid = False
        elif UNKNOWN in verdicts:
            self.valid = UNKNOWN
        else:
            self.valid = True

    def __bool__(self):
        return self.valid is True

    @property
    def failures(self):
        return [r for r in self.results.values() if r.valid is not True]

    def explain(self, verbose=False):
        n_ops = sum(r.n_ops for r in self.results.values())
        lines = [f"{len(self.results)} keys, {n_ops} ops checked: "
                 + {True: "linearizable", False: "NOT linearizable", UNKNOWN: "UNKNOWN"}[self.valid]
                 + (f", {len(self.lost_writes)} lost/phantom writes" if self.lost_writes else "")]
        for lw in self.lost_writes:
            lines.append("  " + lw.explain(self.t0))
        for r in self.results.values():
            if verbose or r.valid is not True:
                lines.append(r.explain(self.t0))
        return "\n".join(lines)

    def __repr__(self):
        return f"<HistoryResult valid={self.valid} keys={len(self.results)}>"


def check_history(history, initial=None, initial_by_key=None, final=None, max_states=DEFAULT_MAX_STATES,
                  time_limit=None, cas_fail_is_read=False, types=REGISTER_TYPES):
    """Check every key of a history (a History or a list of Ops; ops of other
    types, e.g. lock ops, are ignored) for linearizability.

    initial         the value of every key before the history (None = absent)
    initial_by_key  {key: value} overriding `initial` per key
    final           {key: value} read back at the end when every client had
                    stopped; keys of the history missing from it are absent.
                    Adds a final read per key (so a lost acknowledged write
                    makes the key non-linearizable) and runs
                    check_final_state for a direct report.
    max_states, time_limit   the bound, per key
    Returns a HistoryResult."""
    initial_by_key = {freeze(k): v for k, v in (initial_by_key or {}).items()}
    ops = list(history)
    t0 = min((op.invoke for op in ops), default=0.0)
    parts = _by_key(ops, types)
    lost = []
    if final is not None:
        final = {freeze(k): v for k, v in final.items()}
        t_end = max([op.invoke for op in ops] + [op.complete for op in ops if op.complete is not None]
                    + [0.0]) + 1.0
        for key, part in parts.items():
            part.append(Op(f"final:{_show(key)}", "final", "read", _thaw(key), None, invoke=t_end,
                           complete=t_end, outcome=OK, result=final.get(key)))
        lost = check_final_state(ops, final, initial, initial_by_key, types)
    results = {}
    for key, part in parts.items():
        results[key] = check_register(part, initial=initial_by_key.get(key, initial), max_states=max_states,
                                      time_limit=time_limit, cas_fail_is_read=cas_fail_is_read, key=key)
    return HistoryResult(results, lost, t0)


def check_file(path, **kwargs):
    """check_history on a saved JSON-lines history, taking `initial`,
    `initial_by_key` and `final` from its metadata unless given."""
    h = History.load(path)
    for name in ("initial", "initial_by_key", "final"):
        if name not in kwargs and name in h.meta:
            kwargs[name] = h.meta[name]
    return check_history(h, **kwargs)


def brute_force_register(ops, initial=None, cas_fail_is_read=False):
    """Reference check by exhaustive enumeration of orders (no memoization,
    no reductions): exponential, for cross-checking on tiny histories only.
    Returns True if some legal order exists."""
    rops = _normalize(list(ops), cas_fail_is_read)
    if len(rops) > 12:
        raise ValueError("brute force is for tiny histories (<= 12 effective ops)")
    initial = freeze(initial)
    n = len(rops)

    def step(r, state):
        if r.kind == _READ:
            return state == r.a, state
        if r.kind == _WRITE:
            return True, r.a
        if r.kind == _CAS:
            return state == r.a, r.b
        return state != r.a, state

    def go(done, state):
        if all(done[j] or not rops[j].required for j in range(n)):
            return True
        for j in range(n):
            if done[j]:
                continue
            # every op not yet placed that completed before j was invoked must precede j
            if any(not done[p] and rops[p].required and rops[p].ret < rops[j].inv for p in range(n)):
                continue
            legal, new = step(rops[j], state)
            if legal:
                done[j] = True
                if go(done, new):
                    return True
                done[j] = False
        return False

    return go([False] * n, initial)


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(description="Check a saved JSON-lines history of KV register ops for "
                                "linearizability (see docs/checkers.md). Exit 0 linearizable, 1 not, "
                                "2 unknown (bound hit), 3 bad input.")
    p.add_argument("history", help="JSON-lines history file (history.py format)")
    p.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES, help="bound per key")
    p.add_argument("--time-limit", type=float, default=None, help="seconds per key")
    p.add_argument("--cas-fail-is-read", action="store_true",
                   help="a cas that failed with result false observed value != old")
    p.add_argument("--key", action="append", help="check only this key (repeatable)")
    p.add_argument("--no-final", action="store_true", help="ignore meta 'final' (the read-back)")
    p.add_argument("-v", "--verbose", action="store_true", help="also explain the linearizable keys")
    a = p.parse_args(argv)
    try:
        h = History.load(a.history)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    if a.key:
        h = History([op for op in h if op.key in a.key], h.meta)
    final = None if a.no_final else h.meta.get("final")
    try:
        res = check_history(h, initial=h.meta.get("initial"), initial_by_key=h.meta.get("initial_by_key"),
                            final=final, max_states=a.max_states, time_limit=a.time_limit,
                            cas_fail_is_read=a.cas_fail_is_read)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    print(res.explain(verbose=a.verbose))
    return {True: 0, False: 1, UNKNOWN: 2}[res.valid]


if __name__ == "__main__":
    sys.exit(main())
