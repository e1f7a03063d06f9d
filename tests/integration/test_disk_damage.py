"""Damaged data dirs and full disks, with a real `tenure server` (docs/recovery.md).

The scenarios of docs/recovery.md, each on its own copy of one data dir: a server that
acknowledged
WRITES sequential writes (key i holds value i) and was killed with SIGKILL. Sequential
writes put key i at log entry i + a constant, so "which writes survived" has an exact
answer: a prefix of the acknowledged ones, or all of them.

  - a byte flipped in the middle of the open segment: the server refuses to start, names
    the file and offset, and changes nothing; `tenure recover` reports it, `-repair` cuts
    the log there (originals moved to damaged-*/) and says writes may be lost;
  - the last batch's last 321 bytes zeroed: refused (it is not a torn write);
  - a real torn last write (a batch nobody acknowledged, a whole sector missing): cut at
    start with one log line, and every acknowledged key is still there;
  - the open segment truncated mid-entry: a clear refusal, no crash (no signal);
  - `tenure recover` on the data dir of a running server: refused, nothing read or changed;
  - metadata deleted beside a log: refused; `recover -repair` writes the highest term;
    on a follower of a 3-server cluster: refused, and `recover -repair` wants -force;
  - on a longer history (800 writes of 16 KiB, so libraft closes a segment, and with the
    log's memory budget at 4 MiB, takes snapshots): a byte flipped in a closed segment
    and a closed segment truncated refuse, and `-repair` keeps the prefix; whole zeroed
    sectors mid open segment with valid batches after them refuse; a damaged newest
    snapshot refuses, and `-repair` moves it away and starts from the older one and the
    log with every acknowledged write;
  - a full disk (a small tmpfs; needs root): writes answer "no space left on device" with
    the data dir, the log says so (rate-limited), and writes work again once space frees.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_disk_damage
"""

import glob
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from raft_wire import crc32 as raft_crc32  # libraft's CRC-32: MSB first, no reflection, no final xor
from tenure_testlib import Cluster, DevServer, poll_until, tenure_bin

WRITES = int(os.environ.get("TENURE_DISK_DAMAGE_WRITES", "3000"))
VALUE_BYTES = 400  # every batch is then longer than the 321 zeroed bytes
PREFIX = "dd/"
SECTOR = 512
EXIT_TIMEOUT_S = 30.0


def key(i):
    return "%sk%05d" % (PREFIX, i)


def value(i):
    return (("v%05d-" % i) * (VALUE_BYTES // 7 + 1))[:VALUE_BYTES].encode()


# --- libraft 0.15's segment layout (src/raft/disk/layout.h) ------------------------------

def encode_batch(entries):
    """entries: [(term, type, data)] with len(data) % 8 == 0."""
    header = struct.pack("<Q", len(entries))
    for term, kind, data in entries:
        header += struct.pack("<QB3xI", term, kind, len(data))
    data = b"".join(d for _, _, d in entries)
    return struct.pack("<II", raft_crc32(header), raft_crc32(data)) + header + data


def valid_batches(blob):
    """[(start, end, n, term)] of the valid batches from byte 8 on."""
    out, at = [], 8
    while at + 16 <= len(blob):
        crc_header, crc_data, n = struct.unpack_from("<IIQ", blob, at)
        if n == 0 or at + 16 + 16 * n > len(blob):
            break
        header = blob[at + 8:at + 16 + 16 * n]
        if raft_crc32(header) != crc_header:
            break
        sizes = [struct.unpack_from("<I", blob, at + 16 + 16 * i + 12)[0] for i in range(n)]
        term = struct.unpack_from("<Q", blob, at + 16)[0]
        end = at + 16 + 16 * n + sum(sizes)
        if end > len(blob) or raft_crc32(blob[at + 16 + 16 * n:end]) != crc_data:
            break
        out.append((at, end, n, term))
        at = end
    return out


def open_segment_with_data(raft_dir):
    """(path, bytes, batches) of the last open segment holding batches."""
    found = None
    for path in sorted(glob.glob(os.path.join(raft_dir, "open-*")),
                       key=lambda p: int(p.rsplit("-", 1)[1])):
        with open(path, "rb") as f:
            blob = f.read()
        batches = valid_batches(blob)
        if batches:
            found = (path, blob, batches)
    assert found, "no open segment with data in %s: %s" % (raft_dir, os.listdir(raft_dir))
    return found


def patch(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def tree_digest(path):
    """{relative path: sha256} of every file: 'changes nothing' is checked with it."""
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = hashlib.sha256(f.read()).hexdigest()
    return out


class DamagedDirCase:
    """Starts servers on self.data_dir (a copy of a history) with self.addrs."""

    def server(self):
        http_addr, raft_addr = self.addrs  # the raft address is in the stored config
        s = DevServer(data_dir=self.data_dir, dev=False, http_addr=http_addr,
                      raft_addr=raft_addr)
        self.servers.append(s)
        return s

    def start_expecting_refusal(self):
        """Runs the server on the damaged dir; it must exit on its own with an error (not a
        signal: a crash is no answer) and leave the files as they were. Returns its log."""
        before = tree_digest(self.raft_dir)
        s = self.server()
        log_path = os.path.join(self.base, os.path.basename(self.data_dir) + ".log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(s.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                code = proc.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.fail("the server started from a damaged data dir")
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.assertGreater(code, 0, "exit %s (a signal is a crash); log:\n%s" % (code, text))
        self.assertEqual(tree_digest(self.raft_dir), before, "the refusal changed files")
        self.assertIn("is damaged; the server will not start", text)
        self.assertIn("tenure recover -data-dir " + self.data_dir, text)
        self.assertIn("docs/recovery.md", text)
        return text

    def recover(self, *flags):
        return subprocess.run([tenure_bin(), "recover", "-data-dir", self.data_dir, *flags],
                              capture_output=True, text=True, timeout=60)


class DiskDamageTest(DamagedDirCase, unittest.TestCase):
    """One acknowledged history, damaged a different way in each test."""

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="tenure-disk-damage-")
        cls.pristine = os.path.join(cls.base, "pristine")
        server = DevServer(data_dir=cls.pristine, dev=False)
        try:
            server.start()
            cls.addrs = (server.http_addr, server.raft_addr)
            client = server.client(timeout=15.0)
            for i in range(WRITES):
                r = client.request("PUT", "/v1/kv/" + key(i), value(i))
                assert (r.status, r.body) == (200, b"true"), (i, r)
            client.close()
            server.kill()  # SIGKILL: no clean stop, the open segment stays open
        finally:
            server.close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def setUp(self):
        self.data_dir = tempfile.mkdtemp(prefix="case-", dir=self.base)
        os.rmdir(self.data_dir)
        shutil.copytree(self.pristine, self.data_dir)
        self.raft_dir = os.path.join(self.data_dir, "raft")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()

    def present_keys(self, s):
        r = s.request("GET", "/v1/kv/%s?keys" % PREFIX)
        self.assertEqual(r.status, 200, r)
        return set(r.json())

    def assert_acknowledged_prefix(self, s, count):
        """Exactly keys 0..count-1, each with its value."""
        self.assertEqual(self.present_keys(s), {key(i) for i in range(count)})
        for i in (0, count // 2, count - 1):
            r = s.request("GET", "/v1/kv/%s?raw" % key(i))
            self.assertEqual((r.status, r.body), (200, value(i)))

    # --- the scenarios -------------------------------------------------------------------

    def test_an_undamaged_copy_holds_every_acknowledged_write(self):
        # The control for the counting below, and `recover` on a clean dir.
        proc = self.recover()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("Clean", proc.stdout)
        s = self.server().start()
        self.assert_acknowledged_prefix(s, WRITES)

    def test_a_flipped_byte_mid_open_segment_refuses_then_recover_repairs(self):
        path, blob, batches = open_segment_with_data(self.raft_dir)
        start, end, _, _ = batches[len(batches) // 2]
        at = (start + end) // 2
        patch(path, at, bytes([blob[at] ^ 0x10]))
        name = os.path.basename(path)

        log = self.start_expecting_refusal()
        self.assertIn("%s at byte %d" % (name, start), log)
        self.assertIn("data checksum mismatch", log)

        report = self.recover()
        self.assertEqual(report.returncode, 1, report.stdout + report.stderr)
        self.assertIn("Damage: %s at byte %d" % (name, start), report.stdout)
        self.assertIn("may include acknowledged writes", report.stdout)
        self.assertEqual(glob.glob(os.path.join(self.raft_dir, "damaged-*")), [])

        repaired = self.recover("-repair")
        self.assertEqual(repaired.returncode, 0, repaired.stdout + repaired.stderr)
        moved = glob.glob(os.path.join(self.raft_dir, "damaged-*", name))
        self.assertEqual(len(moved), 1, repaired.stdout)
        with open(moved[0], "rb") as f:
            self.assertEqual(f.read()[at], blob[at] ^ 0x10, "the original was not kept as is")

        # What survives is a prefix of the acknowledged writes, cut at the bad batch.
        s = self.server().start()
        present = self.present_keys(s)
        self.assertLess(len(present), WRITES)
        self.assertGreater(len(present), 0)
        self.assert_acknowledged_prefix(s, len(present))

    def test_zeroed_last_321_bytes_refuse(self):
        path, _, batches = open_segment_with_data(self.raft_dir)
        start, end, _, _ = batches[-1]
        self.assertGreater(end - start, 321)
        patch(path, end - 321, bytes(321))
        log = self.start_expecting_refusal()
        self.assertIn("%s at byte %d" % (os.path.basename(path), start), log)
        self.assertIn("not a write cut short by a crash", log)

    def test_a_torn_unacknowledged_last_write_is_cut_with_one_line(self):
        # A batch written after every acknowledged one whose second sector never reached
        # the disk: what a crash during a write leaves. Nobody was told it was stored.
        path, _, batches = open_segment_with_data(self.raft_dir)
        end, term = batches[-1][1], batches[-1][3]
        torn = bytearray(encode_batch([(term, 1, b"\x5a" * 2048)]))
        sector = ((end + 32) // SECTOR + 1) * SECTOR  # a boundary past its header
        lost = sector + SECTOR - end
        torn[lost - SECTOR:lost] = bytes(SECTOR)
        patch(path, end, bytes(torn))

        s = self.server().start()
        with open(s.log_path, encoding="utf-8", errors="replace") as f:
            cut = [line for line in f if "cut the damaged or torn tail" in line]
        self.assertEqual(len(cut), 1, cut)
        self.assertIn("%s at byte %d" % (os.path.basename(path), end), cut[0])
        # The server cannot tell this from a damaged acknowledged batch, and says so.
        self.assertRegex(cut[0], r"1 entries \(indexes (\d+)\.\.\1\), which may have been "
                                 r"acknowledged")
        self.assertIn("the only voter: if they were acknowledged, those writes are lost", cut[0])
        self.assert_acknowledged_prefix(s, WRITES)

    def test_an_open_segment_truncated_mid_entry_refuses_without_crashing(self):
        path, _, batches = open_segment_with_data(self.raft_dir)
        start, end, _, _ = batches[len(batches) // 2]
        os.truncate(path, (start + end) // 2)
        log = self.start_expecting_refusal()
        self.assertIn(os.path.basename(path), log)
        self.assertIn("truncated", log)

    def test_deleted_metadata_beside_a_log_refuses_then_recover_restores_the_term(self):
        metadata = sorted(glob.glob(os.path.join(self.raft_dir, "metadata*")))
        self.assertTrue(metadata)
        terms = []
        for m in metadata:
            with open(m, "rb") as f:
                terms.append(struct.unpack("<4Q", f.read())[2])
            os.remove(m)
        log = self.start_expecting_refusal()
        self.assertIn("forgot its term and its vote", log)

        repaired = self.recover("-repair")
        self.assertEqual(repaired.returncode, 0, repaired.stdout + repaired.stderr)
        self.assertIn("write fresh metadata1: term %d" % max(terms), repaired.stdout)
        s = self.server().start()
        self.assert_acknowledged_prefix(s, WRITES)

    def test_recover_refuses_the_data_dir_of_a_running_server(self):
        # Under a running server its open segment is mid-write: a check would call it torn
        # and a repair would cut what the server just acknowledged.
        s = self.server().start()

        def settled_files():
            # The running server itself writes open segments (and preallocates new
            # ones): only what a repair would move or rewrite is compared.
            return {name: digest for name, digest in tree_digest(self.raft_dir).items()
                    if not name.startswith("open-")}

        before = settled_files()
        for flags in ((), ("-repair",), ("-repair", "-force")):
            proc = self.recover(*flags)
            self.assertEqual(proc.returncode, 1, (flags, proc.stdout, proc.stderr))
            self.assertIn("is in use by another server; stop that server first", proc.stderr)
            self.assertEqual(proc.stdout, "", flags)
        self.assertEqual(settled_files(), before)
        self.assertFalse([n for n in os.listdir(self.raft_dir) if n.startswith("damaged-")])
        self.assert_acknowledged_prefix(s, WRITES)
        s.stop()
        proc = self.recover()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_recover_usage_errors_change_nothing(self):
        before = tree_digest(self.raft_dir)
        cases = [
            ([tenure_bin(), "recover"], 2),
            ([tenure_bin(), "recover", "-data-dir", self.data_dir, "-force"], 2),
            ([tenure_bin(), "recover", "-data-dir", self.data_dir, "extra"], 2),
            ([tenure_bin(), "recover", "-data-dir", os.path.join(self.base, "nowhere")], 1),
        ]
        for argv, code in cases:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            self.assertEqual(proc.returncode, code, (argv, proc.stdout, proc.stderr))
            self.assertTrue(proc.stderr.strip(), argv)
        self.assertEqual(tree_digest(self.raft_dir), before)
        help_proc = subprocess.run([tenure_bin(), "recover", "-h"], capture_output=True,
                                   text=True, timeout=30)
        self.assertEqual(help_proc.returncode, 0)
        self.assertIn("Usage: tenure recover", help_proc.stdout + help_proc.stderr)


BIG_WRITES = 800
BIG_VALUE_BYTES = 16 * 1024  # 800 of them: 12.5 MiB, past libraft's 8 MiB segments


def big_key(i):
    return "big/k%05d" % i


def whole_snapshots(raft_dir):
    """The snapshots in raft_dir with both files, and whether every .meta has
    its data file (a snapshot being written has only one of them)."""
    names = set(os.listdir(raft_dir))
    metas = {n[:-len(".meta")] for n in names if n.startswith("snapshot-") and n.endswith(".meta")}
    datas = {n for n in names if n.startswith("snapshot-") and not n.endswith(".meta")}
    return metas & datas, metas == datas


def write_big_history(data_dir, env=None, snapshots=0):
    """BIG_WRITES acknowledged writes of 16 KiB, then SIGKILL: once at least
    `snapshots` raft snapshots are on disk whole, none half written (the
    last writes may set one off while the kill comes)."""
    server = DevServer(data_dir=data_dir, dev=False, env=env)
    try:
        server.start()
        client = server.client(timeout=15.0)
        for i in range(BIG_WRITES):
            r = client.request("PUT", "/v1/kv/" + big_key(i), b"%05d" % i * (BIG_VALUE_BYTES // 5))
            assert (r.status, r.body) == (200, b"true"), (i, r)
        client.close()
        if snapshots:
            raft_dir = os.path.join(data_dir, "raft")

            def settled():
                whole, none_half = whole_snapshots(raft_dir)
                return len(whole) >= snapshots and none_half

            poll_until(settled, timeout=30.0, message=f"{snapshots} whole snapshots in {raft_dir}")
        server.kill()
    finally:
        server.close()
    return server.http_addr, server.raft_addr


class ClosedSegmentAndSnapshotTest(DamagedDirCase, unittest.TestCase):
    """The rest of the damage matrix, on histories long enough to close a
    segment (8 MiB) and, with the raft log's memory budget lowered to 4 MiB,
    to take snapshots: a closed segment flipped or truncated, a zeroed
    region in the middle of the open segment, the newest snapshot damaged."""

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="tenure-disk-damage-big-")
        cls.pristine_closed = os.path.join(cls.base, "pristine-closed")
        cls.pristine_snapshots = os.path.join(cls.base, "pristine-snapshots")
        cls.closed_addrs = write_big_history(cls.pristine_closed)
        cls.snapshot_addrs = write_big_history(
            cls.pristine_snapshots, env={"TENURE_TEST_RAFT_LOG_BYTES_MAX": str(4 * 1024 * 1024)},
            snapshots=2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()

    def use(self, pristine, addrs):
        self.data_dir = tempfile.mkdtemp(prefix="case-", dir=self.base)
        os.rmdir(self.data_dir)
        shutil.copytree(pristine, self.data_dir)
        self.raft_dir = os.path.join(self.data_dir, "raft")
        self.addrs = addrs

    def closed_segment(self):
        names = [n for n in os.listdir(self.raft_dir) if "-" in n and n[0].isdigit()]
        self.assertTrue(names, os.listdir(self.raft_dir))
        # The largest (the first holds only the bootstrap configuration).
        path = max((os.path.join(self.raft_dir, n) for n in names), key=os.path.getsize)
        with open(path, "rb") as f:
            blob = f.read()
        batches = valid_batches(blob)
        self.assertGreater(len(batches), 10)
        return path, blob, batches

    def present_big_keys(self, s):
        r = s.request("GET", "/v1/kv/big/?keys")
        self.assertEqual(r.status, 200, r)
        return set(r.json())

    def assert_big_prefix(self, s, count):
        self.assertEqual(self.present_big_keys(s), {big_key(i) for i in range(count)})
        r = s.request("GET", "/v1/kv/%s?raw" % big_key(count - 1))
        self.assertEqual((r.status, r.body), (200, b"%05d" % (count - 1) * (BIG_VALUE_BYTES // 5)))

    def repair_and_count(self, name):
        repaired = self.recover("-repair")
        self.assertEqual(repaired.returncode, 0, repaired.stdout + repaired.stderr)
        self.assertIn("may include acknowledged writes", repaired.stdout)
        self.assertEqual(len(glob.glob(os.path.join(self.raft_dir, "damaged-*", name))), 1)
        s = self.server().start()
        present = len(self.present_big_keys(s))
        self.assertGreater(present, 0)
        self.assertLess(present, BIG_WRITES)
        self.assert_big_prefix(s, present)

    def test_a_flipped_byte_in_a_closed_segment_refuses_then_recover_repairs(self):
        self.use(self.pristine_closed, self.closed_addrs)
        path, blob, batches = self.closed_segment()
        start, end, _, _ = batches[len(batches) // 2]
        patch(path, (start + end) // 2, bytes([blob[(start + end) // 2] ^ 0x01]))
        name = os.path.basename(path)
        log = self.start_expecting_refusal()
        self.assertIn("%s at byte %d" % (name, start), log)
        self.assertIn("data checksum mismatch", log)
        self.repair_and_count(name)

    def test_a_truncated_closed_segment_refuses_then_recover_repairs(self):
        self.use(self.pristine_closed, self.closed_addrs)
        path, _, batches = self.closed_segment()
        start, end, _, _ = batches[len(batches) // 2]
        os.truncate(path, (start + end) // 2)
        name = os.path.basename(path)
        log = self.start_expecting_refusal()
        self.assertIn(name, log)
        self.assertIn("the closed segment is truncated", log)
        self.repair_and_count(name)

    def test_a_zeroed_region_mid_open_segment_refuses(self):
        # Whole zeroed sectors, but valid batches after them: not a torn write.
        self.use(self.pristine_closed, self.closed_addrs)
        path, _, batches = open_segment_with_data(self.raft_dir)
        self.assertGreater(len(batches), 4)
        start, end, _, _ = batches[len(batches) // 2]
        first = (start // SECTOR + 1) * SECTOR
        patch(path, first, bytes(4 * SECTOR))
        log = self.start_expecting_refusal()
        self.assertIn("%s at byte %d" % (os.path.basename(path), start), log)
        self.assertIn("followed by a valid batch", log)

    def test_a_damaged_newest_snapshot_refuses_then_recover_falls_back(self):
        self.use(self.pristine_snapshots, self.snapshot_addrs)
        snapshots = sorted((n for n in os.listdir(self.raft_dir)
                            if n.startswith("snapshot-") and not n.endswith(".meta")),
                           key=lambda n: int(n.split("-")[2]))
        self.assertGreaterEqual(len(snapshots), 2, os.listdir(self.raft_dir))
        newest = os.path.join(self.raft_dir, snapshots[-1])
        size = os.path.getsize(newest)
        with open(newest, "rb") as f:
            f.seek(size // 2)
            byte = f.read(1)
        patch(newest, size // 2, bytes([byte[0] ^ 0x40]))
        log = self.start_expecting_refusal()
        self.assertIn(snapshots[-1], log)
        self.assertIn("the newest snapshot's data is damaged", log)

        repaired = self.recover("-repair")
        self.assertEqual(repaired.returncode, 0, repaired.stdout + repaired.stderr)
        self.assertEqual(len(glob.glob(os.path.join(self.raft_dir, "damaged-*",
                                                    snapshots[-1]))), 1, repaired.stdout)
        # The older snapshot and the log still hold every acknowledged write.
        s = self.server().start()
        self.assert_big_prefix(s, BIG_WRITES)


class ClusterMemberTest(unittest.TestCase):
    """A follower whose metadata was deleted: it must not start with its term
    reset and its vote forgotten, and recover must not repair it without -force."""

    def test_a_follower_without_metadata_refuses_and_recover_wants_force(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            for i in range(50):
                r = leader.request("PUT", "/v1/kv/" + key(i), value(i))
                self.assertEqual((r.status, r.body), (200, b"true"))
            follower = next(m for m in cluster.members if m is not leader)
            # Every member holds the last write before the follower goes down.
            poll_until(lambda: follower.request("GET", "/v1/kv/%s?stale" % key(49)).status
                       == 200, timeout=10.0, message="the follower caught up")
            follower.kill()
            raft_dir = os.path.join(follower.data_dir, "raft")
            for m in glob.glob(os.path.join(raft_dir, "metadata*")):
                os.remove(m)
            before = tree_digest(raft_dir)

            follower._spawn()  # DevServer.start would wait for it to be ready
            code = poll_until(lambda: follower.process.poll(), timeout=EXIT_TIMEOUT_S,
                              message="the follower refused to start")
            self.assertEqual(code, 1, follower.log())
            self.assertIn("forgot its term and its vote", follower.log())
            self.assertEqual(tree_digest(raft_dir), before)

            proc = subprocess.run([tenure_bin(), "recover", "-data-dir", follower.data_dir,
                                   "-repair"], capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertIn("cluster of 3 voters", proc.stdout)
            self.assertIn("without -force", proc.stderr)
            self.assertEqual(tree_digest(raft_dir), before)
            # The two others still serve writes.
            r = leader.request("PUT", "/v1/kv/dd/after", b"x")
            self.assertEqual((r.status, r.body), (200, b"true"))


class DamagedTailOfAMemberTest(unittest.TestCase):
    """One zeroed 512-byte sector inside the last batch of a member's log, a batch
    it stored and the cluster acknowledged: at restart it looks exactly like a write
    cut short by a crash, so the server cuts it, but it must say that the entries may
    have been acknowledged (it said "never acknowledged"), and the member gets them
    back from the leader."""

    def test_a_members_damaged_tail_is_cut_honestly_and_refilled_by_its_peers(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            raft_dir = os.path.join(follower.data_dir, "raft")
            for attempt in range(3):
                last = "dd/tail%d" % attempt
                for i in range(20):
                    r = leader.request("PUT", "/v1/kv/" + key(i), value(i))
                    self.assertEqual((r.status, r.body), (200, b"true"))
                # The last write is large, so its batch spans whole sectors.
                big = b"t" * 4096
                r = leader.request("PUT", "/v1/kv/" + last, big)
                self.assertEqual((r.status, r.body), (200, b"true"))
                poll_until(lambda: follower.request("GET", "/v1/kv/%s?stale" % last).status
                           == 200, timeout=10.0, message="the follower caught up")
                follower.kill()
                path, blob, batches = open_segment_with_data(raft_dir)
                start, end, n, _ = batches[-1]
                if big in blob[start:end]:
                    break
                # A leader's own entry (a checkpoint) came after it: again.
                follower.start()
            else:
                self.fail("the last write never ended the follower's log")
            header_end = start + 16 + 16 * n
            sector = (header_end // SECTOR + 1) * SECTOR
            self.assertLessEqual(sector + SECTOR, end)
            patch(path, sector, bytes(SECTOR))

            follower.start()
            cut = [line for line in follower.log().splitlines()
                   if "cut the damaged or torn tail" in line]
            self.assertEqual(len(cut), 1, follower.log_tail())
            self.assertIn("%s at byte %d" % (os.path.basename(path), start), cut[0])
            self.assertIn("which may have been acknowledged", cut[0])
            self.assertIn("one of 3 voters: it gets back from the leader every entry the "
                          "cluster committed", cut[0])
            self.assertNotIn("never acknowledged", follower.log())
            # Every acknowledged write is back on it, from its peers.
            poll_until(lambda: follower.request("GET", "/v1/kv/%s?stale&raw" % last).body == big,
                       timeout=15.0, message="the follower never got its cut entries back")
            keys = follower.request("GET", "/v1/kv/dd/?keys&stale").json()
            self.assertEqual(sorted(keys),
                             sorted([key(i) for i in range(20)]
                                    + ["dd/tail%d" % a for a in range(attempt + 1)]))
            r = leader.request("PUT", "/v1/kv/dd/after", b"x")
            self.assertEqual((r.status, r.body), (200, b"true"))


@unittest.skipUnless(os.geteuid() == 0, "mounting a tmpfs needs root")
class FullDiskTest(unittest.TestCase):
    """A data dir on a small tmpfs, filled up, then given space again."""

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="tenure-full-disk-")
        self.mount = os.path.join(self.base, "mnt")
        self.data_dir = os.path.join(self.mount, "data")
        # Before the mount: DevServer() raises without a binary, and a setUp that
        # raises gets no tearDown to unmount.
        self.server = DevServer(data_dir=self.data_dir, dev=False)
        os.mkdir(self.mount)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", self.mount],
                       check=True, capture_output=True)
        self.mounted = True
        # A ballast leaves 28 MiB, of which libraft's first open segments take
        # 16: room for one more 8 MiB segment and change.
        self.ballast = os.path.join(self.mount, "ballast")
        with open(self.ballast, "wb") as f:
            f.write(bytes(20 * 1024 * 1024))

    def tearDown(self):
        self.server.close()
        if self.mounted:
            subprocess.run(["umount", self.mount], check=False, capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)

    def test_a_full_disk_says_so_and_writes_resume_when_space_frees(self):
        s = self.server.start()
        client = s.client(timeout=15.0)
        big = b"f" * (400 * 1024)
        acked, failure = [], None
        for i in range(120):  # 48 MiB of values at most; the disk has ~12 left
            r = client.request("PUT", "/v1/kv/full/%d" % i, big)
            if r.status != 200:
                failure = r
                break
            self.assertEqual(r.body, b"true")
            acked.append(i)
        self.assertIsNotNone(failure, "the disk never filled up")
        self.assertEqual(failure.status, 500, failure)
        self.assertIn("raft: write failed: no space left on device", failure.text)
        self.assertIn("(data dir %s)" % os.path.join(self.data_dir, "raft"), failure.text)
        self.assertNotIn("unknown error", failure.text)

        # More failures in a burst: each answered, logged once (rate-limited).
        for i in range(20):
            r = client.request("PUT", "/v1/kv/full/burst", b"x")
            self.assertEqual(r.status, 500, r)
            self.assertIn("no space left on device", r.text)
        with open(s.log_path, encoding="utf-8", errors="replace") as f:
            lines = [line for line in f if "no space left on device" in line]
        self.assertGreaterEqual(len(lines), 1)
        self.assertLessEqual(len(lines), 4, "not rate-limited:\n" + "".join(lines))

        os.remove(self.ballast)
        poll_until(lambda: client.request("PUT", "/v1/kv/full/after", b"ok").body == b"true",
                   timeout=15.0, message="a write after space was freed")
        for i in acked:
            r = client.request("GET", "/v1/kv/full/%d?raw" % i)
            self.assertEqual((r.status, len(r.body)), (200, len(big)), i)
        client.close()


if __name__ == "__main__":
    unittest.main()
