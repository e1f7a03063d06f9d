"""Tests of the history checkers in tests/lib (history.py, linearizability.py,
lock_checker.py) on hand-written and randomly generated histories. Pure
Python, no server. Each known-bad history must be flagged, each good one
accepted; random linearizable histories must pass, and their mutations are
compared with an exhaustive search on small histories.

    cd tests/integration && PYTHONPATH=../lib /usr/bin/python3 -m unittest -v test_checkers
"""

import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from history import FAIL, INFO, OK, History, Op, Recorder, load, merge
from linearizability import (UNKNOWN, brute_force_register, check_final_state, check_history,
                             check_register)
from lock_checker import ServerWrite, check_acknowledged, check_locks

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")


class Ops:
    """A terse builder: h.w(p, value, t0, t1) etc. Times are plain numbers."""

    def __init__(self, key="k"):
        self.ops = []
        self.key = key

    def add(self, process, type, args, invoke, complete, outcome=OK, result=None, key=None):
        op = Op(len(self.ops), process, type, self.key if key is None else key, args, invoke,
                complete, outcome, result)
        self.ops.append(op)
        return op

    def w(self, p, v, t0, t1, outcome=OK, key=None):
        return self.add(p, "write", v, t0, t1, outcome, None, key)

    def r(self, p, v, t0, t1, outcome=OK, key=None):
        return self.add(p, "read", None, t0, t1, outcome, v if outcome == OK else None, key)

    def cas(self, p, old, new, t0, t1, outcome=OK, key=None):
        result = {OK: True, FAIL: False, INFO: None}[outcome]
        return self.add(p, "cas", [old, new], t0, t1, outcome, result, key)

    def check(self, **kw):
        return check_register(self.ops, **kw)


# ---------------------------------------------------------------------------
# history.py


class HistoryFormatTest(unittest.TestCase):
    def test_recorder_is_thread_safe_and_round_trips_through_json_lines(self):
        rec = Recorder()
        rec.meta["ttl"] = 10

        def client(p):
            for i in range(200):
                op = rec.invoke(p, "write", key=f"k{p % 3}", args=f"{p}-{i}")
                if i % 7 == 0:
                    rec.info(op, error="timeout")
                elif i % 5 == 0:
                    rec.fail(op, error="HTTP 409")
                else:
                    rec.ok(op)
            rec.invoke(p, "read", key="k0")  # left pending

        threads = [threading.Thread(target=client, args=(p,)) for p in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        h = rec.history()
        self.assertEqual(len(h), 8 * 201)
        self.assertEqual(sorted(op.id for op in h), list(range(8 * 201)))
        for op in h:
            if op.type == "write":
                self.assertIn(op.outcome, (OK, FAIL, INFO))
                self.assertGreaterEqual(op.complete, op.invoke)
            else:
                self.assertIsNone(op.outcome)      # pending
                self.assertEqual(op.status, INFO)  # ... counts as info
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "h.jsonl")
            rec.dump(path)
            back = load(path)
        self.assertEqual(back.meta, {"ttl": 10})
        self.assertEqual(back.ops, h.ops)

    def test_record_context_manager(self):
        rec = Recorder()
        with rec.record(1, "write", key="k", args=1) as op:
            op.ok()
        with rec.record(1, "write", key="k", args=2, suppress=(TimeoutError,)):
            raise TimeoutError("no answer")
        with self.assertRaises(KeyError):
            with rec.record(1, "write", key="k", args=3):
                raise KeyError("boom")
        with rec.record(1, "read", key="k"):
            pass  # forgot to complete: unknown
        with rec.record(1, "cas", key="k", args=[1, 2]) as op:
            op.fail(result=False)
        outcomes = [(op.outcome, op.error) for op in rec.history()]
        self.assertEqual(outcomes[0], (OK, None))
        self.assertEqual(outcomes[1], (INFO, "TimeoutError: no answer"))
        self.assertEqual(outcomes[2][0], INFO)
        self.assertEqual(outcomes[3][0], INFO)
        self.assertEqual(outcomes[4], (FAIL, None))
        op = rec.history()[0]
        with self.assertRaises(ValueError):
            rec.ok(rec._ops[0])  # completed twice
        self.assertIn("write", op.describe())

    def test_event_merge_and_bad_input(self):
        rec1, rec2 = Recorder(), Recorder()
        rec1.event(1, "lost", key="lock", args={"session": "s1"})
        rec2.ok(rec2.invoke(2, "write", key="k", args=1))
        rec1.ok(rec1.invoke(1, "read", key="k"), 1)
        m = merge(rec1.history(), rec2.history())
        self.assertEqual([op.id for op in m], [0, 1, 2])
        self.assertEqual([op.type for op in m], ["lost", "write", "read"])
        self.assertEqual(m[0].invoke, m[0].complete)
        with self.assertRaises(ValueError):
            History.loads('{"id": 1, "process": 1, "type": "read", "invoke": 1, "outcome": "maybe"}\n')
        with self.assertRaises(ValueError):
            History.loads('{"id": 1, "process": 1, "type": "read", "invoke": 2, "complete": 1}\n')
        with self.assertRaises(ValueError):
            History.loads('{"id": 1, "process": 1, "type": "read", "invoke": 1, "colour": 1}\n')
        h = History.loads('# comment\n\n{"meta": {"a": 1}}\n{"id": 0, "process": 1, "type": "read", "invoke": 1}\n')
        self.assertEqual((len(h), h.meta), (1, {"a": 1}))


# ---------------------------------------------------------------------------
# linearizability.py: hand-written histories


class LinearizableHistoriesTest(unittest.TestCase):
    def assertLinearizable(self, h, **kw):
        res = h.check(**kw)
        self.assertIs(res.valid, True, res.explain())
        self.assertIs(brute_force_register(h.ops, initial=kw.get("initial"),
                                           cas_fail_is_read=kw.get("cas_fail_is_read", False)), True)

    def test_sequential(self):
        h = Ops()
        h.r(1, None, 0, 1)
        h.w(1, "a", 2, 3)
        h.r(2, "a", 4, 5)
        h.cas(1, "a", "b", 6, 7)
        h.r(2, "b", 8, 9)
        self.assertLinearizable(h)

    def test_initial_value_and_delete(self):
        h = Ops()
        h.r(1, 5, 0, 1)
        h.add(1, "delete", None, 2, 3)
        h.r(2, None, 4, 5)
        self.assertLinearizable(h, initial=5)

    def test_concurrent_writes_any_order_reads_agree(self):
        h = Ops()
        h.w(1, 1, 0, 10)
        h.w(2, 2, 1, 9)
        h.w(3, 3, 2, 8)
        h.r(4, 2, 3, 4)    # 2 first
        h.r(5, 1, 5, 6)    # then 1
        h.r(4, 3, 11, 12)  # 3 last
        h.r(5, 3, 13, 14)
        self.assertLinearizable(h)

    def test_read_concurrent_with_write_sees_old_or_new(self):
        for seen in (None, "x"):
            h = Ops()
            h.w(1, "x", 0, 10)
            h.r(2, seen, 1, 2)
            self.assertLinearizable(h)
        h = Ops()
        h.w(1, "x", 0, 10)
        h.r(2, "x", 1, 2)
        h.r(3, "x", 3, 4)  # once seen, stays (nothing else written)
        self.assertLinearizable(h)

    def test_touching_intervals_count_as_concurrent(self):
        h = Ops()
        h.w(1, 1, 0, 5)
        h.r(2, None, 5, 6)  # invoked exactly when the write completed
        self.assertLinearizable(h)

    def test_info_write_that_took_effect_late(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 2, 3, outcome=INFO)   # timed out at 3 ...
        h.r(3, "a", 4, 5)                 # ... not applied yet at 5
        h.r(3, "b", 6, 7)                 # ... applied by 7
        h.r(4, "b", 8, 9)
        self.assertLinearizable(h)

    def test_info_write_that_never_took_effect(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 2, 3, outcome=INFO)
        for i in range(5):
            h.r(3, "a", 4 + 2 * i, 5 + 2 * i)
        self.assertLinearizable(h)

    def test_info_write_seen_then_overwritten_and_pending_op(self):
        h = Ops()
        h.w(1, "a", 0, 1, outcome=INFO)
        h.r(2, "a", 2, 3)
        h.w(3, "c", 4, 5)
        h.r(2, "c", 6, 7)
        h.add(9, "write", "z", 6.5, None, None)   # pending at the end of the history
        self.assertLinearizable(h)

    def test_info_cas_took_effect_or_not(self):
        h = Ops()
        h.w(1, 1, 0, 1)
        h.cas(2, 1, 2, 2, 3, outcome=INFO)
        h.r(3, 1, 4, 5)
        h.r(3, 2, 6, 7)
        self.assertLinearizable(h)
        h = Ops()
        h.w(1, 1, 0, 1)
        h.cas(2, 1, 2, 2, 3, outcome=INFO)
        h.w(1, 7, 4, 5)
        h.r(3, 7, 6, 7)   # the cas would fail now: it never happened
        self.assertLinearizable(h)

    def test_cas_chain_and_failed_cas(self):
        h = Ops()
        h.w(1, 0, 0, 1)
        h.cas(1, 0, 1, 2, 4)
        h.cas(2, 0, 5, 3, 5, outcome=FAIL)   # lost the race: dropped
        h.cas(2, 1, 2, 6, 7)
        h.cas(3, 9, 3, 6, 8, outcome=FAIL)
        h.r(3, 2, 9, 10)
        self.assertLinearizable(h)
        self.assertLinearizable(h, cas_fail_is_read=True)

    def test_concurrent_cas_one_wins(self):
        h = Ops()
        h.w(1, 0, 0, 1)
        h.cas(1, 0, 1, 2, 10)
        h.cas(2, 0, 2, 3, 9, outcome=FAIL)
        h.cas(3, 1, 3, 4, 8)   # saw 1, so 1 won
        h.r(4, 3, 11, 12)
        self.assertLinearizable(h, cas_fail_is_read=True)

    def test_independent_keys(self):
        h = Ops()
        h.w(1, 1, 0, 1, key="a")
        h.w(2, 1, 0, 1, key="b")
        h.r(3, 1, 2, 3, key="a")
        h.r(3, None, 2, 3, key="c")
        h.w(1, 2, 4, 5, key="b")
        h.r(2, 2, 6, 7, key="b")
        h.add(5, "acquire", {"session": "s"}, 0, 1, OK, 7, key="lock")  # not a register op: ignored
        res = check_history(h.ops)
        self.assertIs(res.valid, True, res.explain())
        self.assertEqual(set(res.results), {"a", "b", "c"})

    def test_final_read_back_accepted(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 0.5, 3, outcome=INFO)
        h.w(1, "c", 2, 4)
        h.w(1, "x", 5, 6, key="other")
        for final in ({"k": "c"}, {"k": "b", "other": "x"}):
            res = check_history(h.ops, final=final | {"other": "x"})
            self.assertIs(res.valid, True, res.explain())
            self.assertEqual(res.lost_writes, [])


class NonLinearizableHistoriesTest(unittest.TestCase):
    def assertFlagged(self, h, bad_op=None, in_reason=None, **kw):
        res = h.check(**kw)
        self.assertIs(res.valid, False, res.explain())
        self.assertIs(brute_force_register(h.ops, initial=kw.get("initial"),
                                           cas_fail_is_read=kw.get("cas_fail_is_read", False)), False)
        if bad_op is not None:
            self.assertEqual(res.op.id, bad_op.id, res.explain())
        if in_reason is not None:
            self.assertIn(in_reason, res.reason)
        text = res.explain()
        self.assertIn("cannot place", text)
        return res

    def test_stale_read_after_completed_write(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(1, "b", 2, 3)
        bad = h.r(2, "a", 4, 5)
        res = self.assertFlagged(h, bad, "stale")
        self.assertEqual(res.states, ["b"])
        self.assertEqual([op.id for op, _ in res.linearized], [0, 1])

    def test_lost_write(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 2, 3)
        h.r(1, "b", 4, 5)
        bad = h.r(1, "a", 6, 7)   # b vanished and a came back
        self.assertFlagged(h, bad)

    def test_read_of_a_value_never_written(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 0, 1, outcome=INFO)
        bad = h.r(2, "zzz", 2, 3)
        self.assertFlagged(h, bad, "ever wrote")

    def test_read_from_the_future(self):
        h = Ops()
        bad = h.r(1, "a", 0, 1)
        h.w(2, "a", 2, 3)
        self.assertFlagged(h, bad, "future")

    def test_two_cas_successes_from_the_same_old_value(self):
        h = Ops()
        h.w(1, 0, 0, 1)
        h.cas(1, 0, 1, 2, 5)
        h.cas(2, 0, 2, 3, 6)
        self.assertFlagged(h)

    def test_non_monotonic_reads_during_a_write(self):
        h = Ops()
        h.w(1, "old", 0, 1)
        h.w(1, "new", 2, 10)
        h.r(2, "new", 3, 4)
        bad = h.r(3, "old", 5, 6)   # after a read that saw "new" had completed
        self.assertFlagged(h, bad)

    def test_info_ops_cannot_explain_everything(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 2, 3, outcome=INFO)
        h.r(3, "b", 4, 5)
        bad = h.r(3, "a", 6, 7)   # b took effect: a cannot come back
        self.assertFlagged(h, bad)

    def test_pinned_info_write_observed_before_it_was_invoked(self):
        h = Ops()
        h.r(1, "b", 0, 1)
        h.w(2, "b", 2, 3, outcome=INFO)
        self.assertFlagged(h, in_reason="future")

    def test_cas_refused_although_value_matched(self):
        h = Ops()
        h.w(1, 1, 0, 1)
        h.cas(2, 1, 2, 2, 3, outcome=FAIL)
        self.assertIs(h.check().valid, True)   # Jepsen's default: a failed op is just dropped
        self.assertFlagged(h, cas_fail_is_read=True)

    def test_acked_write_missing_from_final_state(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        last = h.w(2, "b", 2, 3)
        h.w(3, "c", 1.5, 2.5, outcome=FAIL)    # refused: cannot have overwritten it
        res = check_history(h.ops, final={"k": "a"})
        self.assertIs(res.valid, False)
        self.assertEqual([lw.op.id for lw in res.lost_writes], [last.id], res.explain())
        self.assertIs(res.results["k"].valid, False)
        self.assertIn("lost", res.explain())
        # a key missing from the read-back counts as absent
        self.assertEqual(len(check_final_state(h.ops, {})), 1)
        # a concurrent info write may legitimately be last
        h.w(4, "d", 2.5, 3.5, outcome=INFO)
        self.assertEqual(check_final_state(h.ops, {"k": "d"}), [])
        self.assertIs(check_history(h.ops, final={"k": "d"}).valid, True)
        phantom = check_final_state(h.ops, {"k": "never"})
        self.assertIn("never written", phantom[-1].explain())

    def test_bound_gives_unknown(self):
        rnd = random.Random(7)
        ops = simulate(rnd, 300, 8, values="small", p_info=0.2)
        mutate_read(rnd, ops)
        res = check_register(ops, max_states=50)
        self.assertEqual(res.valid, UNKNOWN)
        self.assertIn("gave up", res.explain())
        rnd = random.Random(0)
        ops = simulate(rnd, 2000, 5, values="small", p_info=0.05)   # a known blow-up
        mutate_read(rnd, ops, start=0.5)
        t = time.monotonic()
        res = check_register(ops, time_limit=0.3, max_states=10**9)
        self.assertEqual(res.valid, UNKNOWN)
        self.assertLess(time.monotonic() - t, 5.0)   # the time limit is honoured (generous tolerance)


# ---------------------------------------------------------------------------
# random histories


def simulate(rnd, n_ops, n_procs, values="unique", p_info=0.05, p_read=0.5, p_cas=0.2, key="k",
             mean_gap=1.0, mean_dur=2.0):
    """A history of a real register under concurrent clients. Each op gets a
    random interval and a linearization point inside it, and results come from
    applying the ops in the order of those points, so the history is
    linearizable by construction. An "info" op takes effect inside its
    interval, later (after it timed out) or never, and its process is then
    replaced by a new one (it may still be in flight). values: "unique" (every
    write a new value) or "small" (values 0..3, the hard case)."""
    free = {p: rnd.random() for p in range(n_procs)}
    next_pid = n_procs
    ops, points = [], []
    counter = 0
    written = [None]
    for i in range(n_ops):
        p = min(free, key=free.get)
        inv = free[p] + rnd.expovariate(1 / mean_gap)
        ret = inv + rnd.expovariate(1 / mean_dur)
        x = rnd.random()
        if x < p_read:
            typ, args = "read", None
        else:
            if values == "unique":
                counter += 1
                new = counter
            else:
                new = rnd.randrange(4)
            if x < p_read + p_cas:
                old = rnd.choice(written[-3:]) if values == "unique" else rnd.randrange(4)
                typ, args = "cas", [old, new]
            else:
                typ, args = "write", new
            written.append(new)
        info = rnd.random() < p_info
        if not info:
            point = rnd.uniform(inv, ret)
        else:
            y = rnd.random()
            point = None if y < 0.3 else rnd.uniform(inv, ret) if y < 0.65 else ret + rnd.expovariate(1 / mean_dur)
        ops.append(Op(i, p, typ, key, args, inv, ret, INFO if info else OK))
        if point is not None:
            points.append((point, i))
        if info:
            del free[p]
            free[next_pid] = ret
            next_pid += 1
        else:
            free[p] = ret
    state = None
    for _, i in sorted(points):
        op = ops[i]
        if op.type == "read":
            op.result = state
        elif op.type == "write":
            state = op.args
        elif state == op.args[0]:
            state = op.args[1]
            if op.outcome == OK:
                op.result = True
        elif op.outcome == OK:
            op.outcome, op.result = FAIL, False
    for op in ops:
        if op.outcome == INFO:
            op.result = None
    return ops


def mutate_read(rnd, ops, start=0.0):
    """Change the result of one ok read (from `start` of the history on); returns it."""
    reads = [op for op in ops if op.type == "read" and op.outcome == OK]
    op = rnd.choice(reads[int(len(reads) * start):])
    values = sorted({o.args if o.type == "write" else o.args[1] for o in ops if o.type != "read"} | {None},
                    key=repr)
    choices = [v for v in values if v != op.result]
    op.result = rnd.choice(choices) if choices and rnd.random() < 0.8 else "never-written"
    return op


def prefix_at(ops, blamed):
    """The history as it stood just before `blamed` completed: the ops invoked
    by then, those not completed yet pending (a failed one had no effect:
    left out), and the same with `blamed` completed."""
    t = blamed.complete
    pending = []
    for op in ops:
        if op.invoke >= t:
            continue
        if op.outcome is not None and op.complete < t:
            pending.append(op)
        elif op.outcome != FAIL:
            pending.append(op.copy(outcome=None, complete=None, result=None))
    done = [op for op in pending if op.id != blamed.id] + [blamed]
    return pending, done


class RandomHistoriesTest(unittest.TestCase):
    def test_simulated_histories_are_linearizable(self):
        for seed in range(60):
            rnd = random.Random(seed)
            values = "unique" if seed % 2 else "small"
            ops = simulate(rnd, rnd.randrange(20, 300), rnd.randrange(2, 10), values=values,
                           p_info=rnd.choice([0.0, 0.05, 0.2]))
            res = check_register(ops)
            self.assertIs(res.valid, True, f"seed {seed}\n{res.explain()}")

    def test_agrees_with_brute_force_on_small_histories(self):
        """Linearizable histories and their mutations, checked both ways: the
        WGL search (with and without its reductions) must give exactly the
        brute-force verdict. Small value domains and many info ops, where the
        reductions and the treatment of info ops matter most."""
        counts = {True: 0, False: 0}
        for seed in range(400):
            rnd = random.Random(1000 + seed)
            values = "small" if seed % 3 else "unique"
            ops = simulate(rnd, rnd.randrange(3, 9), rnd.randrange(2, 4), values=values,
                           p_info=rnd.choice([0.0, 0.2, 0.4]), p_read=0.4, mean_dur=rnd.choice([1.0, 3.0]))
            cas_read = bool(seed % 2)
            self.assertIs(check_register(ops, cas_fail_is_read=cas_read).valid, True, f"seed {seed}")
            if any(op.type == "read" and op.outcome == OK for op in ops):
                mutate_read(rnd, ops)
            for reduce in (True, False):
                res = check_register(ops, cas_fail_is_read=cas_read, reduce=reduce)
                want = brute_force_register(ops, cas_fail_is_read=cas_read)
                self.assertIs(res.valid, want, f"seed {seed} reduce={reduce}\n"
                              + "\n".join(op.describe() for op in ops))
                if res.valid is False:
                    # the explanation is minimal: the history up to the blamed op's
                    # completion is linearizable while it is still pending, and
                    # not once it completes
                    pending, done = prefix_at(ops, res.op)
                    self.assertIs(brute_force_register(pending, cas_fail_is_read=cas_read), True, f"seed {seed}")
                    self.assertIs(brute_force_register(done, cas_fail_is_read=cas_read), False, f"seed {seed}")
            counts[want] += 1
        self.assertGreater(counts[False], 100)   # the mutations do produce bad histories
        self.assertGreater(counts[True], 50)

    def test_mutated_histories_are_mostly_rejected(self):
        rejected = 0
        n = 60
        for seed in range(n):
            rnd = random.Random(5000 + seed)
            ops = simulate(rnd, 200, rnd.randrange(3, 8), values="unique", p_info=0.05)
            op = mutate_read(rnd, ops)
            res = check_register(ops)
            self.assertNotEqual(res.valid, UNKNOWN)
            if res.valid is False:
                rejected += 1
                self.assertEqual(res.op.id, op.id, res.explain())   # blames the changed read
        self.assertGreaterEqual(rejected, n * 0.8)

    def test_two_thousand_ops_ten_clients(self):
        """The performance target (~2,000 ops over 5-10 clients per key in a
        few seconds): no time assertion, the bound must simply not be hit."""
        rnd = random.Random(42)
        ops = simulate(rnd, 2000, 10, values="unique", p_info=0.1)
        t = time.monotonic()
        res = check_register(ops)
        took = time.monotonic() - t
        self.assertIs(res.valid, True, res.explain())
        op = mutate_read(rnd, ops, start=0.5)
        op.result = "never-written"
        res = check_register(ops)
        self.assertIs(res.valid, False)
        self.assertEqual(res.op.id, op.id)
        print(f"\n  2000 ops / 10 clients / 10% info: {took:.2f} s, {res.steps} states", file=sys.stderr)

    def test_many_keys(self):
        rnd = random.Random(9)
        ops = []
        for k in range(20):
            ops += simulate(rnd, 100, 5, key=f"key{k}", p_info=0.1)
        for i, op in enumerate(ops):
            op.id = i
        res = check_history(ops)
        self.assertIs(res.valid, True, res.explain())
        self.assertEqual(len(res.results), 20)
        op = mutate_read(rnd, [op for op in ops if op.key == "key7"])
        op.result = "never-written"
        res = check_history(ops)
        self.assertIs(res.valid, False)
        self.assertEqual([r.key for r in res.failures], ["key7"])


class CommandLineTest(unittest.TestCase):
    def run_tool(self, tool, path, *args):
        return subprocess.run([sys.executable, os.path.join(LIB, tool), path, *args],
                              capture_output=True, text=True, timeout=60)

    def test_recheck_saved_histories(self):
        h = Ops()
        h.w(1, "a", 0, 1)
        h.w(2, "b", 2, 3)
        h.r(3, "b", 4, 5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "h.jsonl")
            History(h.ops, {"final": {"k": "b"}}).dump(path)
            p = self.run_tool("linearizability.py", path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("linearizable", p.stdout)
            History(h.ops, {"final": {"k": "a"}}).dump(path)   # b was lost
            p = self.run_tool("linearizability.py", path)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("NOT linearizable", p.stdout)
            self.assertIn("cannot place", p.stdout)
            p = self.run_tool("linearizability.py", path, "--no-final")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            ops = simulate(random.Random(1), 300, 8, values="small", p_info=0.3)
            mutate_read(random.Random(1), ops)
            History(ops).dump(path)
            p = self.run_tool("linearizability.py", path, "--max-states", "10")
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            with open(path, "w") as f:
                f.write("{not json\n")
            p = self.run_tool("linearizability.py", path)
            self.assertEqual(p.returncode, 3)
            self.assertIn("h.jsonl:1", p.stderr)

            lk = LockHistory()
            a = lk.grant("s1", 10, 0, 1)
            lk.renew("s1", 1.5)
            lk.grant("s2", 20, 2, 3)   # while s1's session was certainly alive
            History(lk.ops, {"ttl": 10.0}).dump(path)
            p = self.run_tool("lock_checker.py", path)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("two-holders", p.stdout)
            p = self.run_tool("lock_checker.py", path, "--ttl", "0")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("stale", p.stdout)
            self.assertIsNotNone(a)


# ---------------------------------------------------------------------------
# lock_checker.py


class LockHistory:
    def __init__(self, lock="lock"):
        self.ops = []
        self.lock = lock

    def add(self, process, type, args, invoke, complete, outcome=OK, result=None, key="default"):
        op = Op(len(self.ops), process, type, self.lock if key == "default" else key, args, invoke,
                complete, outcome, result)
        self.ops.append(op)
        return op

    def session(self, s, t):
        return self.add(s, "create-session", {"ttl": "10s"}, t, t + 0.01, OK, s, key=None)

    def grant(self, s, token, t0, t1):
        return self.add(s, "acquire", {"session": s}, t0, t1, OK, {"token": token})

    def refused(self, s, t0, t1):
        return self.add(s, "acquire", {"session": s}, t0, t1, OK, False)

    def release(self, s, t0, t1=None):
        return self.add(s, "release", {"session": s}, t0, t0 + 0.01 if t1 is None else t1, OK, True)

    def renew(self, s, t0, outcome=OK):
        return self.add(s, "renew", {"session": s}, t0, t0 + 0.01, outcome, key=None)

    def lost(self, s, t):
        return self.add(s, "lost", {"session": s}, t, t)

    def write(self, s, token, value, t0, t1, outcome=OK):
        return self.add(s, "fenced-write", {"token": token, "value": value}, t0, t1, outcome)


def simulate_locks(rnd, n_clients=4, duration=40.0, ttl=1.0, mult=2.0, bug=None, p_pause=0.04, p_lost_ack=0.05):
    """A lock service with sessions and fencing under concurrent clients, as
    an event simulation: each request is processed by the server at a random
    moment inside its interval. Holders renew every ttl/3, write with their
    token, release; some pause for longer than ttl x mult (their sessions
    expire; when they wake up their stale writes are refused); some write
    answers are lost (info). The server expires a session ttl x mult after
    its creation or last renewal, as tenure does. Bugs: "early-expiry"
    (sessions expire after ttl / 3), "no-fence" (writes by any token once
    granted are accepted). Returns (ops, server writes, server stats with
    "stale_accepted": writes accepted with a token older than the newest)."""
    import heapq
    ops, writes = [], []
    srv = {"sessions": {}, "holder": None, "index": 0, "tokens": set(), "stale_accepted": 0}
    events, seq = [], [0]

    def push(t, kind, payload):
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, payload))

    def send(c, t, type, args, key="lock"):
        op = Op(len(ops), c["pid"], type, key, args, t, None, None)
        ops.append(op)
        p = t + rnd.uniform(0.001, 0.03)
        push(p, "process", (c, op))

    def expire(p):
        expiry = 1.0 / 3 if bug == "early-expiry" else mult
        for sid, last in list(srv["sessions"].items()):
            if p >= last + ttl * expiry:
                del srv["sessions"][sid]
                srv["index"] += 1
                if srv["holder"] and srv["holder"][0] == sid:
                    srv["holder"] = None

    def process(p, c, op):
        expire(p)
        sid = (op.args or {}).get("session") if isinstance(op.args, dict) else None
        alive = sid in srv["sessions"]
        if op.type == "create-session":
            srv["index"] += 1
            new = f"s{srv['index']}"
            srv["sessions"][new] = p
            return OK, new
        if op.type == "renew":
            if alive:
                srv["sessions"][sid] = p
                return OK, None
            return FAIL, None
        if op.type == "acquire":
            if not alive:
                return FAIL, None
            h = srv["holder"]
            if h is None:
                srv["index"] += 1
                srv["holder"] = (sid, srv["index"])
                srv["tokens"].add(srv["index"])
                return OK, {"token": srv["index"]}
            return OK, ({"token": h[1]} if h[0] == sid else False)
        if op.type == "release":
            if srv["holder"] and srv["holder"][0] == sid:
                srv["holder"] = None
                srv["index"] += 1
                return OK, True
            return OK, False
        if op.type == "fenced-write":
            token = op.args["token"]
            h = srv["holder"]
            current = h is not None and h[1] == token
            if current or (bug == "no-fence" and token in srv["tokens"]):
                if not current and token < max(srv["tokens"]):
                    srv["stale_accepted"] += 1   # after a newer grant: what fencing is for
                srv["index"] += 1
                writes.append({"lock": "lock", "token": token, "index": srv["index"], "value": op.args["value"]})
                return OK, None
            return FAIL, None
        raise AssertionError(op.type)

    clients = [{"pid": i, "session": None, "token": None, "hold_until": 0, "next_renew": 0, "n": 0}
               for i in range(n_clients)]
    for c in clients:
        push(rnd.uniform(0, 0.2), "send", c)
    while events:
        t, _, kind, payload = heapq.heappop(events)
        if kind == "process":
            c, op = payload
            outcome, result = process(t, c, op)
            ack = t + rnd.uniform(0.001, 0.03)
            if op.type == "fenced-write" and rnd.random() < p_lost_ack:
                outcome, result, ack = INFO, None, ack + 0.2   # the answer was lost: a timeout
            push(ack, "ack", (c, op, outcome, result))
            continue
        if kind == "ack":
            c, op, outcome, result = payload
            op.complete, op.outcome, op.result = t, outcome, result
            think = rnd.uniform(0.02, 0.15)
            if op.type == "create-session":
                c["session"] = result
            elif op.type == "acquire":
                if outcome == OK and result:
                    c["token"] = result["token"]
                    c["hold_until"] = t + rnd.uniform(0.3, 2.0)
                    c["next_renew"] = t + ttl / 3
                elif outcome == FAIL:
                    c["session"] = None
                else:
                    think = rnd.uniform(0.1, 0.4)
            elif op.type == "renew":
                if outcome == OK:
                    c["next_renew"] = t + ttl / 3
                else:
                    c["session"] = c["token"] = None
            elif op.type == "fenced-write" and outcome == FAIL:
                ops.append(Op(len(ops), c["pid"], "lost", "lock", {"session": c["session"]}, t, t, OK))
                c["token"] = None
            elif op.type == "release":
                c["token"] = None
                think = rnd.uniform(0.1, 0.6)
            if c["token"] is not None and rnd.random() < p_pause:
                think = ttl * mult + rnd.uniform(0.2, 1.0)   # SIGSTOP
            push(t + think, "send", c)
            continue
        c = payload
        if t > duration:
            continue
        s = c["session"]
        if s is None:
            send(c, t, "create-session", None, key=None)
        elif c["token"] is None:
            send(c, t, "acquire", {"session": s})
        elif t >= c["hold_until"]:
            send(c, t, "release", {"session": s})
        elif t >= c["next_renew"]:
            send(c, t, "renew", {"session": s}, key=None)
        else:
            c["n"] += 1
            send(c, t, "fenced-write", {"session": s, "token": c["token"], "value": f"p{c['pid']}-{c['n']}"})
    return ops, writes, srv


class RandomLockHistoriesTest(unittest.TestCase):
    def test_correct_server_passes_and_pauses_show_stale_holders(self):
        stale = 0
        for seed in range(30):
            ops, writes, _ = simulate_locks(random.Random(seed))
            rep = check_locks(ops, writes, ttl=1.0)
            self.assertTrue(rep.valid, f"seed {seed}\n{rep.explain()}")
            self.assertGreater(sum(len(g) for g in rep.grants.values()), 10)
            stale += len(rep.stale_holders)
            # the guarantee is ttl x 2 here, so claiming it is still sound
            self.assertTrue(check_locks(ops, writes, ttl=2.0).valid, f"seed {seed}")
        self.assertGreater(stale, 5)   # the pause case was exercised

    def test_server_bugs_are_caught(self):
        for bug, kinds in (("no-fence", {"fenced-write-after-newer-grant", "stale-write-accepted"}),
                           ("early-expiry", {"two-holders"})):
            caught = manifested = 0
            for seed in range(30):
                ops, writes, srv = simulate_locks(random.Random(seed), bug=bug)
                rep = check_locks(ops, writes, ttl=1.0)
                if bug == "no-fence":
                    if srv["stale_accepted"]:
                        manifested += 1
                        self.assertTrue(rep.kinds() & kinds, f"seed {seed}: {rep.explain()}")
                    else:
                        self.assertTrue(rep.valid, f"seed {seed}: {rep.explain()}")
                else:
                    manifested += 1
                caught += bool(rep.kinds() & kinds)
            self.assertGreater(manifested, 10, bug)
            self.assertGreaterEqual(caught, manifested * 0.8, bug)


class LockCheckerTest(unittest.TestCase):
    def good_handoffs(self):
        h = LockHistory()
        h.session("s1", 0)
        h.session("s2", 0)
        h.grant("s1", 10, 0.1, 0.2)
        h.refused("s2", 0.3, 0.4)
        h.write("s1", 10, "a", 0.5, 0.6)
        h.renew("s1", 0.7)
        h.release("s1", 1.0, 1.1)
        h.grant("s2", 15, 1.05, 1.2)    # concurrent with the release: fine
        h.write("s2", 15, "b", 1.3, 1.4)
        h.write("s1", 10, "late", 1.35, 1.45, outcome=FAIL)
        h.release("s2", 2.0)
        h.grant("s1", 30, 2.5, 2.6)
        h.grant("s1", 30, 2.7, 2.8)     # re-acquire while holding keeps the token
        h.write("s1", 30, "c", 2.9, 3.0)
        server = [{"lock": "lock", "token": 10, "index": 12, "value": "a"},
                  {"lock": "lock", "token": 15, "index": 17, "value": "b"},
                  {"lock": "lock", "token": 30, "index": 33, "value": "c"}]
        return h, server

    def test_good_handoffs(self):
        h, server = self.good_handoffs()
        rep = check_locks(h.ops, server, ttl=10.0, lock_delay=5.0)
        self.assertTrue(rep.valid, rep.explain())
        self.assertEqual(rep.stale_holders, [])
        self.assertEqual(len(rep.grants["lock"]), 3)
        self.assertEqual(len(rep.grants["lock"][2].reacquires), 1)
        self.assertIn("hold", rep.explain())

    def test_reacquire_after_an_unanswered_release_keeps_the_token(self):
        """A release whose answer was lost may never have been applied: the
        same session's next acquire getting the same token is the old grant,
        still held (found by test_cluster_faults_*). After a release that was
        answered, the same token again is a reused token."""
        for outcome, valid in ((INFO, True), (OK, False)):
            h = LockHistory()
            h.session("s1", 0)
            h.grant("s1", 10, 0.1, 0.2)
            h.add("s1", "release", {"session": "s1"}, 0.3, 0.4, outcome, True if outcome == OK else None)
            h.grant("s1", 10, 0.5, 0.6)
            rep = check_locks(h.ops, None, ttl=10.0)
            self.assertEqual(rep.valid, valid, (outcome, rep.explain()))
            if not valid:
                self.assertIn("token-reused", rep.kinds())

    def test_stale_holder_whose_writes_were_refused(self):
        """The pause case: s1 is SIGSTOPped past its TTL, s2 gets the lock,
        s1 wakes up still believing it holds it; its writes are refused."""
        h = LockHistory()
        h.session("s1", 0)
        h.grant("s1", 10, 0.1, 0.2)
        h.renew("s1", 0.5)
        h.write("s1", 10, "a", 0.6, 0.7)
        h.session("s2", 1.0)
        h.grant("s2", 40, 1.0, 2.0)     # s1's session may have expired from 0.5 + 1.0
        h.write("s2", 40, "b", 2.1, 2.2)
        h.write("s1", 10, "late", 3.0, 3.1, outcome=FAIL)
        h.renew("s1", 3.2, outcome=FAIL)   # s1 learns it lost the session
        server = [ServerWrite("lock", 10, 11, "a"), ServerWrite("lock", 40, 41, "b")]
        rep = check_locks(h.ops, server, ttl=1.0)
        self.assertTrue(rep.valid, rep.explain())
        self.assertEqual(len(rep.stale_holders), 1, rep.explain(verbose=True))
        stale = rep.stale_holders[0]
        self.assertEqual([op.type for op in stale.ops], ["fenced-write"])
        self.assertIn("1 of its 1 writes", stale.message)
        self.assertEqual(rep.grants["lock"][0].end_reason, "renew #8 failed")
        # with lock-delay honoured, a grant 0.5 s after the possible expiry is a violation
        rep = check_locks(h.ops, server, ttl=1.0, lock_delay=1.0)
        self.assertEqual(rep.kinds(), {"two-holders"}, rep.explain())

    def test_stale_holder_whose_write_was_accepted(self):
        h = LockHistory()
        h.grant("s1", 10, 0.1, 0.2)
        h.grant("s2", 40, 1.0, 2.0)
        h.write("s1", 10, "late", 3.0, 3.1)   # accepted: the fence failed
        server = [ServerWrite("lock", 10, 45, "late")]
        rep = check_locks(h.ops, server, ttl=0.5)
        self.assertEqual(rep.kinds(), {"two-holders", "stale-write-accepted", "fenced-write-after-newer-grant"},
                         rep.explain())
        # from the client side alone (no server record)
        rep = check_locks(h.ops, None, ttl=0.5)
        self.assertIn("stale-write-accepted", rep.kinds())

    def test_overlapping_holders_with_accepted_writes(self):
        h = LockHistory()
        h.session("s1", 0)
        h.session("s2", 0)
        h.grant("s1", 10, 0.1, 0.2)
        h.grant("s2", 12, 0.3, 0.4)     # s1's session certainly alive (ttl 10), never released
        h.write("s1", 10, "a", 0.35, 0.6)
        h.write("s2", 12, "b", 0.5, 0.6)
        server = [ServerWrite("lock", 10, 13, "a"), ServerWrite("lock", 12, 14, "b")]
        rep = check_locks(h.ops, server, ttl=10.0)
        self.assertIn("two-holders", rep.kinds(), rep.explain())
        self.assertIn("fenced-write-after-newer-grant", rep.kinds())
        self.assertFalse(rep.valid)
        self.assertIn("VIOLATIONS", rep.explain())
        # without a TTL the client-side overlap alone proves nothing ...
        rep = check_locks(h.ops, None, ttl=None)
        self.assertTrue(rep.valid, rep.explain())
        self.assertEqual(len(rep.stale_holders), 1)
        # ... but s1's accepted write invoked after s2's grant does
        h.write("s1", 10, "a2", 0.7, 0.8)
        rep = check_locks(h.ops, None, ttl=None)
        self.assertEqual(rep.kinds(), {"two-holders", "stale-write-accepted"}, rep.explain())

    def test_grants_without_tokens(self):
        h = LockHistory()
        h.add("s1", "acquire", {"session": "s1"}, 0.0, 1.0, OK, True)
        h.add("s2", "acquire", {"session": "s2"}, 0.5, 1.5, OK, True)
        h.renew("s1", 2.0)
        h.renew("s2", 2.0)
        rep = check_locks(h.ops, None, ttl=5.0)
        self.assertEqual(rep.kinds(), {"two-holders"}, rep.explain())
        self.assertEqual({w.kind for w in rep.warnings}, {"no-token"})

    def test_non_increasing_tokens(self):
        h = LockHistory()
        h.grant("s1", 20, 0.1, 0.2)
        h.release("s1", 0.3)
        h.grant("s2", 15, 0.5, 0.6)   # invoked after the first grant was acknowledged
        rep = check_locks(h.ops, None, ttl=10.0)
        self.assertIn("token-order", rep.kinds(), rep.explain())
        h = LockHistory()
        h.grant("s1", 20, 0.1, 0.2)
        h.release("s1", 0.3)
        h.grant("s2", 20, 0.5, 0.6)
        rep = check_locks(h.ops, None, ttl=10.0)
        self.assertEqual(rep.kinds(), {"token-reused"}, rep.explain())
        h = LockHistory()
        h.grant("s1", 20, 0.1, 0.2)
        h.release("s1", 0.3)
        h.grant("s1", 20, 0.5, 0.6)   # the same session after a release: a new grant, the same token
        rep = check_locks(h.ops, None, ttl=10.0)
        self.assertEqual(rep.kinds(), {"token-reused"}, rep.explain())
        # concurrent acquires may be granted in either order
        h = LockHistory()
        h.grant("s1", 20, 0.1, 0.5)
        h.grant("s2", 15, 0.2, 0.3)
        h.release("s2", 0.35)
        h.release("s1", 0.8)
        rep = check_locks(h.ops, None, ttl=10.0)
        self.assertTrue(rep.valid, rep.explain())

    def test_server_record_checks(self):
        h, server = self.good_handoffs()
        cases = [
            ("fenced-write-after-newer-grant", server + [{"lock": "lock", "token": 10, "index": 20,
                                                          "value": "late"}]),
            ("write-before-grant", [dict(server[0], index=9)] + server[1:]),
            ("token-regressed", server[:2] + [dict(server[2], index=16)]),
            ("lost-write", server[:2]),
            ("phantom-write", server + [{"lock": "lock", "token": 30, "index": 34, "value": "who?"}]),
        ]
        for kind, record in cases:
            with self.subTest(kind):
                rep = check_locks(h.ops, record, ttl=10.0)
                self.assertIn(kind, rep.kinds(), rep.explain())
        rep = check_locks(h.ops, server + [{"lock": "lock", "token": 99, "index": 100, "value": "x"}], ttl=10.0)
        self.assertEqual({w.kind for w in rep.warnings}, {"unknown-token"})
        self.assertEqual(rep.kinds(), {"phantom-write"})

    def test_check_acknowledged(self):
        self.assertEqual(check_acknowledged(["a", "b"], ["a", "b", "c"], attempted=["c"]), [])
        found = check_acknowledged(["a", "b"], ["a", "z"], attempted=["c"])
        self.assertEqual(sorted(f.kind for f in found), ["lost-write", "phantom-write"])
        self.assertIn('"b"', found[0].message)


if __name__ == "__main__":
    unittest.main()
