"""Client histories for the fault tests: a small operation format, a
thread-safe recorder and JSON-lines files, checked by linearizability.py
(KV registers) and lock_checker.py (locks under fencing). Standard library
only (Debian's /usr/bin/python3). See docs/checkers.md.

    from history import Recorder

    rec = Recorder()
    with rec.record(process=1, type="write", key="k", args="v1",
                    suppress=(OSError,)) as op:   # a transport error -> "info"
        status = put("k", "v1")
        if status == 200:
            op.ok()
        else:
            op.fail(error=f"HTTP {status}")       # definitely not applied
    op = rec.invoke(2, "read", key="k")           # the same without `with`
    rec.ok(op, result="v1")
    rec.meta["final"] = {"k": "v1"}               # what the end-of-test read-back saw
    rec.dump("/tmp/history.jsonl")                # re-check it later

An operation (Op) is one client call:
  process   who issued it (int or str); one process has one call in flight
  type      "read", "write", "cas", "delete" on a KV register (key = the KV
            key); "acquire", "release", "renew", "lost", "fenced-write",
            "create-session", "destroy-session" for locks (key = the lock key)
  key       the register or lock it is about (None where meaningless)
  args      the arguments: write -> the value; cas -> [old, new]; read -> None;
            acquire/release/renew/lost -> {"session": id}; fenced-write ->
            {"token": t, "value": v}
  invoke    time.monotonic() when the call was sent (CLOCK_MONOTONIC: one
            clock for every process on the machine, so histories of several
            client processes can be merged)
  complete  time.monotonic() when its answer (or its failure) was seen
  outcome   "ok"   it took effect (exactly once, between invoke and complete),
                   with `result` (the value read, the token granted, ...)
            "fail" it definitely did not take effect (a CAS that returned
                   false, an HTTP 4xx)
            "info" unknown: a timeout or transport error. It may have taken
                   effect at any time after `invoke` -- even after `complete`
                   -- or never (Jepsen's semantics). A pending op (no outcome
                   yet when the history was taken) is treated as "info".
  result    the answer of an "ok" op (for "fail", optionally what it saw: a
            CAS that returned false records result=False)
  error     free text for "fail"/"info" (the exception, the HTTP status)

File format: JSON lines, one object per op with exactly the fields above plus
"id"; lines of the form {"meta": {...}} carry free-form metadata (the final
read-back, the TTL, the server's record of fenced writes) and are merged.
"""

import contextlib
import json
import os
import threading
import time

__all__ = [
    "FAIL",
    "INFO",
    "OK",
    "History",
    "Op",
    "OpHandle",
    "Recorder",
    "dump",
    "freeze",
    "load",
    "merge",
]

OK = "ok"
FAIL = "fail"
INFO = "info"
OUTCOMES = (OK, FAIL, INFO)

_FIELDS = ("id", "process", "type", "key", "args", "invoke", "complete", "outcome", "result", "error")


class Op:
    """One client operation. `outcome` None means still pending (treated as info)."""

    __slots__ = _FIELDS

    def __init__(self, id, process, type, key=None, args=None, invoke=0.0, complete=None,
                 outcome=None, result=None, error=None):
        if outcome is not None and outcome not in OUTCOMES:
            raise ValueError(f"bad outcome {outcome!r} (want one of {OUTCOMES} or None)")
        if complete is not None and invoke is not None and complete < invoke:
            raise ValueError(f"op {id}: complete {complete} < invoke {invoke}")
        self.id = id
        self.process = process
        self.type = type
        self.key = key
        self.args = args
        self.invoke = float(invoke)
        self.complete = None if complete is None else float(complete)
        self.outcome = outcome
        self.result = result
        self.error = error

    @property
    def status(self):
        """The outcome, with a pending op counted as "info"."""
        return self.outcome if self.outcome is not None else INFO

    @property
    def end(self):
        """The latest time this op may take effect: complete for ok, +inf for info/pending."""
        if self.outcome == OK or self.outcome == FAIL:
            return self.complete
        return float("inf")

    def to_dict(self):
        return {f: getattr(self, f) for f in _FIELDS}

    @classmethod
    def from_dict(cls, d):
        unknown = set(d) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown op fields {sorted(unknown)} in {d!r}")
        for need in ("id", "process", "type", "invoke"):
            if need not in d:
                raise ValueError(f"op without {need!r}: {d!r}")
        return cls(**d)

    def copy(self, **changes):
        d = self.to_dict()
        d.update(changes)
        return Op(**d)

    def describe(self, t0=0.0):
        """One line for humans, times relative to t0:
        `#12 p3 cas('k', [1, 2]) -> ok True  [0.104, 0.131]`."""
        args = "" if self.args is None else json.dumps(self.args, default=repr)
        key = "" if self.key is None else json.dumps(self.key)
        inner = ", ".join(s for s in (key, args) if s)
        out = self.status
        if self.outcome == OK or (self.outcome == FAIL and self.result is not None):
            out += " " + json.dumps(self.result, default=repr)
        if self.outcome is None:
            out += " (pending)"
        if self.error:
            out += f" ({self.error})"
        comp = "-" if self.complete is None else f"{self.complete - t0:.6f}"
        return f"#{self.id} p{self.process} {self.type}({inner}) -> {out}  [{self.invoke - t0:.6f}, {comp}]"

    def __repr__(self):
        return f"<Op {self.describe()}>"

    def __eq__(self, other):
        return isinstance(other, Op) and self.to_dict() == other.to_dict()

    __hash__ = None


class History:
    """A list of ops plus a metadata dict. Iterable; ops keep their ids."""

    def __init__(self, ops=(), meta=None):
        self.ops = list(ops)
        self.meta = dict(meta or {})

    def __iter__(self):
        return iter(self.ops)

    def __len__(self):
        return len(self.ops)

    def __getitem__(self, i):
        return self.ops[i]

    @property
    def start(self):
        """The earliest invoke time (0.0 for an empty history); for relative times."""
        return min((op.invoke for op in self.ops), default=0.0)

    def filter(self, types=None, key=None, process=None):
        """A new History (same meta) of the ops matching every given criterion."""
        types = None if types is None else set([types] if isinstance(types, str) else types)
        ops = [op for op in self.ops
               if (types is None or op.type in types)
               and (key is None or op.key == key)
               and (process is None or op.process == process)]
        return History(ops, self.meta)

    def by_key(self, types=None):
        """{key: [ops]} in the order of the history, optionally only some types."""
        out = {}
        for op in self.ops:
            if types is None or op.type in types:
                out.setdefault(_hashable(op.key), []).append(op)
        return out

    def dumps(self):
        lines = []
        if self.meta:
            lines.append(json.dumps({"meta": self.meta}, sort_keys=True))
        lines.extend(json.dumps(op.to_dict()) for op in self.ops)
        return "".join(line + "\n" for line in lines)

    def dump(self, path):
        """Write JSON lines to `path` (atomically: a temporary file, then rename)."""
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.dumps())
        os.replace(tmp, path)

    @classmethod
    def loads(cls, text, source="<string>"):
        ops, meta = [], {}
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                d = json.loads(line)
                if set(d) == {"meta"}:
                    meta.update(d["meta"])
                else:
                    ops.append(Op.from_dict(d))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{source}:{n}: {e}") from None
        ids = [op.id for op in ops]
        if len(set(map(_hashable, ids))) != len(ids):
            raise ValueError(f"{source}: duplicate op ids")
        return cls(ops, meta)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls.loads(f.read(), source=str(path))

    def __repr__(self):
        return f"<History {len(self.ops)} ops, meta keys {sorted(self.meta)}>"


def load(path):
    """Read a JSON-lines history file."""
    return History.load(path)


def dump(history, path, meta=None):
    """Write a History (or a list of ops, with optional meta) to `path`."""
    if not isinstance(history, History):
        history = History(history, meta)
    elif meta:
        history = History(history.ops, {**history.meta, **meta})
    history.dump(path)


def merge(*histories):
    """One History of several (e.g. one per client process): ops sorted by
    invoke time and renumbered 0.., metadata merged (later wins)."""
    ops, meta = [], {}
    for h in histories:
        if isinstance(h, History):
            meta.update(h.meta)
        ops.extend(h)
    ops.sort(key=lambda op: op.invoke)
    return History([op.copy(id=i) for i, op in enumerate(ops)], meta)


class OpHandle:
    """What Recorder.record() yields: complete the op with ok/fail/info."""

    __slots__ = ("recorder", "op")

    def __init__(self, recorder, op):
        self.recorder = recorder
        self.op = op

    @property
    def done(self):
        return self.op.outcome is not None

    def ok(self, result=None):
        self.recorder.ok(self.op, result)

    def fail(self, result=None, error=None):
        self.recorder.fail(self.op, result, error)

    def info(self, error=None):
        self.recorder.info(self.op, error)


class Recorder:
    """Thread-safe history recorder. Times come from `clock` (time.monotonic)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.meta = {}
        self._lock = threading.Lock()
        self._ops = []

    def invoke(self, process, type, key=None, args=None):
        """Record that `process` sends a call now; returns the pending Op."""
        with self._lock:
            op = Op(len(self._ops), process, type, key, args, invoke=self.clock())
            self._ops.append(op)
        return op

    def complete(self, op, outcome, result=None, error=None):
        if outcome not in OUTCOMES:
            raise ValueError(f"bad outcome {outcome!r}")
        now = self.clock()
        with self._lock:
            if op.outcome is not None:
                raise ValueError(f"op {op.id} completed twice ({op.outcome}, then {outcome})")
            op.complete = now
            op.outcome = outcome
            op.result = result
            op.error = None if error is None else str(error)
        return op

    def ok(self, op, result=None):
        return self.complete(op, OK, result)

    def fail(self, op, result=None, error=None):
        return self.complete(op, FAIL, result, error)

    def info(self, op, error=None):
        return self.complete(op, INFO, None, error)

    def event(self, process, type, key=None, args=None, result=None):
        """An instantaneous ok op (invoke == complete), e.g. "lost": the client
        stopped acting as the holder of `key` now."""
        op = self.invoke(process, type, key, args)
        with self._lock:
            op.complete = op.invoke
            op.outcome = OK
            op.result = result
        return op

    def add(self, op):
        """Append a ready-made Op (its id is replaced by the next free one)."""
        with self._lock:
            op = op.copy(id=len(self._ops))
            self._ops.append(op)
        return op

    @contextlib.contextmanager
    def record(self, process, type, key=None, args=None, suppress=()):
        """Invoke an op around a block. The block calls handle.ok/fail/info;
        if it raises, the op becomes "info" with the exception as error (the
        exception is swallowed if it is an instance of `suppress`, else
        re-raised); if it finishes without completing the op, "info"."""
        handle = OpHandle(self, self.invoke(process, type, key, args))
        try:
            yield handle
        except BaseException as e:
            if not handle.done:
                self.info(handle.op, error=f"{e.__class__.__name__}: {e}")
            if suppress and isinstance(e, suppress):
                return
            raise
        else:
            if not handle.done:
                self.info(handle.op, error="not completed by the recording block")

    def history(self):
        """A snapshot History (copies of the ops; pending ones stay pending)."""
        with self._lock:
            return History([op.copy() for op in self._ops], self.meta)

    def dump(self, path):
        self.history().dump(path)

    def __len__(self):
        with self._lock:
            return len(self._ops)


def _hashable(v):
    """A hashable, comparable form of a JSON value (lists -> tuples, dicts -> sorted items)."""
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


freeze = _hashable
