"""Unit tests of labdeck-holder, the Python program that keeps a lab machine's shells, run with
nothing but Debian's python3: `python3 -B -m unittest discover -s server/holder -p 'test_*.py'`.

The holder file is loaded as a module (it has no .py suffix); its daemon does not start (main
runs only as __main__). The tests drive its own parts: the frame encoders and decoders against the
golden frames the TypeScript client is tested with too (protocol-frames.json), the output log,
once-only input, the limits, and connections over socket pairs served by the holder's own loop
(Holder.turn) with real PTYs: a bare PTY pair where the test plays the shell, and a real /bin/sh.
"""

import importlib.machinery
import importlib.util
import json
import os
import pty
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import tty
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
# Seconds a test waits for something the holder or a shell does; each step takes milliseconds.
WAIT_S = 5.0


def load_holder():
    """The holder file as a module named labdeck_holder (so its main() does not run)."""
    sys.dont_write_bytecode = True  # no __pycache__ beside the holder in the checkout
    loader = importlib.machinery.SourceFileLoader("labdeck_holder", os.path.join(HERE, "labdeck-holder"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


holder = load_holder()

with open(os.path.join(HERE, "protocol-frames.json"), encoding="utf-8") as f:
    GOLDEN = json.load(f)
KINDS = GOLDEN["kinds"]
KIND_OF_TYPE = {k["type"]: name for name, k in KINDS.items()}


def expand_hex(value):
    """A golden `hex`: a hex string, or a list of hex strings and {repeat, count} runs."""
    if isinstance(value, str):
        return bytes.fromhex(value)
    return b"".join(bytes.fromhex(p) if isinstance(p, str) else bytes.fromhex(p["repeat"]) * p["count"] for p in value)


def expand_data(value):
    """A golden byte string: hex, {utf8: text} or {repeat, count}."""
    if isinstance(value, str):
        return bytes.fromhex(value)
    if "utf8" in value:
        return value["utf8"].encode("utf-8")
    return bytes.fromhex(value["repeat"]) * value["count"]


def golden_frames(direction):
    return [f for f in GOLDEN["frames"] if KINDS[f["kind"]]["direction"] == direction]


def golden_meaning(frame):
    """A golden frame's fields with its data as bytes (what a decoder gives)."""
    fields = dict(frame["fields"])
    if KINDS[frame["kind"]]["body"] != "json" and "data" in fields:
        fields["data"] = expand_data(fields["data"])
    return fields


def read_holder_frames(buf):
    """Splits what a holder sent into (kind name, fields) and returns them with the unread rest.
    The client's decoder is client.ts; this one reads the tests' own connections."""
    frames = []
    while len(buf) >= 5:
        length, kind = struct.unpack_from(">IB", buf)
        if len(buf) < 4 + length:
            break
        body, buf = buf[5 : 4 + length], buf[4 + length :]
        name = KIND_OF_TYPE[kind]
        if KINDS[name]["body"] == "json":
            fields = json.loads(body)
        elif name == "ACK_AS":
            n = body[0]
            w = body[1 + n]
            (seq,) = struct.unpack_from(">Q", body, 2 + n + w)
            fields = {"id": body[1 : 1 + n].decode(), "writer": body[2 + n : 2 + n + w].decode(), "seq": seq}
        else:
            n = body[0]
            (value,) = struct.unpack_from(">Q", body, 1 + n)
            tid = body[1 : 1 + n].decode()
            fields = {"id": tid, "offset": value, "data": body[9 + n :]} if name == "OUTPUT" else {"id": tid, "seq": value}
        frames.append((name, fields))
    return frames, buf


class GoldenFrames(unittest.TestCase):
    """The holder's side of protocol-frames.json; client.ts has the other (frames.test.ts)."""

    def test_constants_agree_with_the_golden_file(self):
        self.assertEqual(holder.PROTOCOL, GOLDEN["limits"]["protocol"])
        self.assertEqual(holder.MAX_FRAME, GOLDEN["limits"]["maxFrameBytes"])
        self.assertEqual(holder.TERMINAL_ID.pattern, GOLDEN["limits"]["terminalId"])
        for name, kind in KINDS.items():
            self.assertEqual(getattr(holder, "T_" + name), kind["type"], name)

    def test_every_kind_has_a_golden_frame(self):
        self.assertEqual({f["kind"] for f in GOLDEN["frames"]}, set(KINDS))

    def test_encodes_the_frames_it_sends_to_the_golden_bytes(self):
        sent = [f for f in golden_frames("holder->client") if not f.get("decodeOnly")]
        self.assertGreater(len(sent), 10)
        for f in sent:
            with self.subTest(f["name"]):
                m = golden_meaning(f)
                kind = f["kind"]
                if KINDS[kind]["body"] == "json":
                    got = holder.json_frame(KINDS[kind]["type"], f["fields"])
                elif kind == "OUTPUT":
                    got = holder.output_frame(m["id"], m["offset"], m["data"])
                elif kind == "ACK":
                    got = holder.ack_frame(m["id"], m["seq"])
                else:
                    got = holder.ack_as_frame(m["id"], m["writer"], m["seq"])
                self.assertEqual(got.hex(), expand_hex(f["hex"]).hex())

    def test_decodes_the_frames_it_receives_to_their_fields(self):
        received = golden_frames("client->holder")
        self.assertGreater(len(received), 10)
        for f in received:
            with self.subTest(f["name"]):
                data = expand_hex(f["hex"])
                kind, body, size = holder.first_frame(bytearray(data))
                self.assertEqual((kind, size), (KINDS[f["kind"]]["type"], len(data)))
                self.assertIsNone(holder.first_frame(bytearray(data[:-1])), "one byte short is not a whole frame")
                m = golden_meaning(f)
                if f["kind"] == "INPUT":
                    self.assertEqual(holder.read_input(kind, body), (m["id"], None, m["seq"], m["data"]))
                elif f["kind"] == "INPUT_AS":
                    self.assertEqual(holder.read_input(kind, body), (m["id"], m["writer"], m["seq"], m["data"]))
                else:
                    self.assertEqual(holder.read_json(body), m)

    def test_the_tests_own_reader_agrees_with_the_golden_holder_frames(self):
        for f in golden_frames("holder->client"):
            with self.subTest(f["name"]):
                frames, rest = read_holder_frames(expand_hex(f["hex"]))
                self.assertEqual((frames, rest), ([(f["kind"], golden_meaning(f))], b""))

    def test_refuses_every_malformed_frame_sent_to_it(self):
        refused = [f for f in GOLDEN["refused"] if f["direction"] == "client->holder"]
        self.assertGreater(len(refused), 10)
        for f in refused:
            with self.subTest(f["name"]), Harness(self) as h:
                h.bare_terminal("t1")
                peer = h.connect()
                peer.open("t1")  # open for writing: what is refused is the frame itself
                peer.send(expand_hex(f["hex"]))
                if f["refusal"]["closes"]:
                    peer.wait_closed()
                    with self.assertRaises(ValueError):
                        holder.first_frame(bytearray(expand_hex(f["hex"])))
                else:
                    ((_, error),) = peer.wait_for(lambda fr: fr[0] == "ERROR")
                    self.assertTrue(error["message"].startswith(f["refusal"]["message"]), error["message"])
                    # The connection goes on: it still answers.
                    self.assertEqual(peer.open("probe", mode="read")[0], "OPENED")


class Harness:
    """A Holder that is not listening (no socket, no signals of its own), in a temporary
    directory; connections are socket pairs and the holder's loop runs one turn at a time."""

    def __init__(self, test, state=True):
        self.test = test
        self.state = state

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="labdeck-holder-test-")
        self.holder = holder.Holder(os.path.join(self.dir, "holder.sock"), os.path.join(self.dir, "state") if self.state else None)
        self.peers = []
        self.fds = []
        return self

    def __exit__(self, *exc):
        for peer in self.peers:
            peer.sock.close()
            peer.conn.close()
        for term in self.holder.terminals.values():
            term.hangup()
            if term.fd is not None:
                os.close(term.fd)
            term.log.close()
        for fd in self.fds:
            os.close(fd)
        for term in self.holder.terminals.values():
            if term.pid is not None:
                try:
                    os.kill(term.pid, signal.SIGKILL)
                    os.waitpid(term.pid, 0)
                except OSError:
                    pass
        self.holder.sel.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def connect(self):
        ours, theirs = socket.socketpair()
        peer = Peer(self, ours, holder.Connection(self.holder, theirs))
        self.peers.append(peer)
        (hello,) = peer.wait_for(lambda fr: fr[0] == "HELLO")
        self.test.assertEqual(hello[1]["instance"], self.holder.instance)
        return peer

    def bare_terminal(self, tid="t1"):
        """A running terminal on a PTY pair with no shell: the test writes its output to the
        returned slave fd and reads the input that reaches it there (raw mode: bytes as they are)."""
        master, slave = pty.openpty()
        tty.setraw(slave)
        os.set_blocking(slave, False)
        self.fds.append(slave)
        term = holder.Terminal(self.holder, tid)
        os.set_blocking(master, False)
        term.fd = master
        term.interest()
        self.holder.terminals[tid] = term
        return term, slave

    def turn(self):
        self.holder.turn(longest=0.01)


class Peer:
    """The client end of one connection: sends bytes, reads the holder's frames."""

    def __init__(self, harness, sock, conn):
        self.harness = harness
        self.sock = sock
        self.conn = conn
        self.buf = b""
        self.frames = []
        self.eof = False
        sock.setblocking(False)

    def send(self, data):
        """Sends all of data, turning the holder while the socket is full (a frame up to 1 MiB)."""
        view = memoryview(data)
        deadline = time.monotonic() + WAIT_S
        while view:
            try:
                view = view[self.sock.send(view) :]
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.harness.test.fail("the holder does not read")
                self.harness.turn()
                self.read()

    def read(self):
        while not self.eof:
            try:
                data = self.sock.recv(1 << 20)
            except BlockingIOError:
                break
            if not data:
                self.eof = True
            self.buf += data
        frames, self.buf = read_holder_frames(self.buf)
        self.frames += frames

    def wait_for(self, match, count=1):
        """Turns the holder until `count` frames that `match` came; returns them (and forgets them)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            self.harness.turn()
            self.read()
            got = [f for f in self.frames if match(f)]
            if len(got) >= count:
                got = got[:count]
                self.frames = [f for f in self.frames if f not in got]
                return got
            if self.eof or time.monotonic() > deadline:
                self.harness.test.fail("waited for a frame; got %r (eof %s)" % (self.frames[-5:], self.eof))

    def wait_closed(self):
        deadline = time.monotonic() + WAIT_S
        while not self.eof:
            self.harness.turn()
            self.read()
            if time.monotonic() > deadline:
                self.harness.test.fail("the holder kept the connection open")
        self.harness.test.assertTrue(self.conn.closed)

    def output(self, tid, until):
        """OUTPUT bytes of `tid` until `until(bytes)` holds, checking that they come in order."""
        data = b""
        offset = None
        deadline = time.monotonic() + WAIT_S
        while True:
            rest = []
            for name, fields in self.frames:
                if name == "OUTPUT" and fields["id"] == tid:
                    if offset is not None:
                        self.harness.test.assertEqual(fields["offset"], offset, "OUTPUT continues where the last ended")
                    offset = fields["offset"] + len(fields["data"])
                    data += fields["data"]
                else:
                    rest.append((name, fields))
            self.frames = rest
            if until(data):
                return data
            if time.monotonic() > deadline:
                self.harness.test.fail("waited for output; got %r" % data[-300:])
            self.harness.turn()
            self.read()

    def open(self, tid="t1", **fields):
        msg = {"id": tid, "from": -1, "tail": 0, "writer": "w1", "cols": 80, "rows": 24, "mode": "write"}
        msg.update(fields)
        self.send(holder.json_frame(holder.T_OPEN, msg))
        (reply,) = self.wait_for(lambda fr: fr[0] in ("OPENED", "GONE") and fr[1]["id"] == tid)
        return reply

    def input(self, tid, seq, data):
        t = tid.encode()
        self.send(holder.frame(holder.T_INPUT, bytes([len(t)]) + t + struct.pack(">Q", seq) + data))

    def input_as(self, tid, writer, seq, data):
        t, w = tid.encode(), writer.encode()
        self.send(holder.frame(holder.T_INPUT_AS, bytes([len(t)]) + t + bytes([len(w)]) + w + struct.pack(">Q", seq) + data))


def read_fd(fd, until, what):
    """What a PTY end gives until `until(bytes)` holds (the holder is not turned meanwhile)."""
    data = b""
    deadline = time.monotonic() + WAIT_S
    while not until(data):
        try:
            data += os.read(fd, 4096)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise AssertionError("waited for %s; got %r" % (what, data))
            time.sleep(0.005)
    return data


def drain_fd(fd):
    data = b""
    while True:
        try:
            data += os.read(fd, 4096)
        except BlockingIOError:
            return data


class OutputLogTest(unittest.TestCase):
    """Offset addressing, RAM and disk rings, reads at and below the oldest byte, a cut segment."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="labdeck-holder-log-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        # Small rings (bytes) so a few appends cross every limit.
        for name, value in (("RAM_BYTES", 8), ("SEGMENT_BYTES", 16), ("DISK_BYTES", 32)):
            patcher = mock.patch.object(holder, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    def log(self):
        lg = holder.OutputLog(os.path.join(self.dir, "t1"))
        self.addCleanup(lg.close)
        return lg

    def test_bytes_are_addressed_by_offset_from_ram_and_from_disk(self):
        lg = self.log()
        everything = bytes(range(48, 48 + 40))
        for i in range(0, 40, 5):
            lg.append(everything[i : i + 5])
        self.assertEqual(lg.end, 40)
        # RAM is cut to the newest RAM_BYTES each time it grows past twice that (at 20 and 30 bytes).
        self.assertEqual((lg.ram_offset, len(lg.ram)), (32, 8))
        self.assertEqual(lg.read(35, 100), everything[35:])
        # Older bytes come from the segment holding them, never past its end (the next read goes on).
        oldest = lg.oldest
        offset = oldest
        got = b""
        while offset < lg.end:
            chunk = lg.read(offset, 7)
            self.assertTrue(0 < len(chunk) <= 7, "a read at %d gave %r" % (offset, chunk))
            got += chunk
            offset += len(chunk)
        self.assertEqual(got, everything[oldest:])
        self.assertEqual(lg.read(lg.end, 10), b"", "nothing at the end yet")

    def test_the_disk_ring_drops_its_oldest_segments(self):
        lg = self.log()
        for i in range(12):
            lg.append(bytes([65 + i]) * 8)  # 96 bytes in 8-byte appends
        self.assertEqual(lg.end, 96)
        # Segments of SEGMENT_BYTES, at most DISK_BYTES of them: the oldest kept starts at 64.
        self.assertEqual([(o, n) for o, n, _ in lg.segments], [(64, 16), (80, 16)])
        self.assertEqual(lg.disk_bytes, 32)
        self.assertEqual(sorted(os.listdir(lg.dir)), ["%016d.seg" % 64, "%016d.seg" % 80])
        self.assertEqual(lg.oldest, 64)
        self.assertEqual(lg.read(64, 3), b"III")
        self.assertEqual(lg.read(63, 3), b"", "below the oldest byte nothing is held")
        self.assertEqual(lg.read(0, 3), b"")

    def test_ram_is_cut_to_ram_bytes_when_it_passes_twice_that(self):
        lg = holder.OutputLog(None)
        lg.append(b"x" * 16)
        self.assertEqual((lg.ram_offset, lg.oldest, lg.end), (0, 0, 16))
        lg.append(b"y")
        self.assertEqual((lg.ram_offset, lg.oldest, lg.end, bytes(lg.ram)), (9, 9, 17, b"xxxxxxxy"))

    def test_memory_only_keeps_what_ram_holds(self):
        lg = holder.OutputLog(None)
        lg.append(b"0123456789" * 2)
        self.assertEqual((lg.end, lg.oldest), (20, 12))
        self.assertEqual(lg.read(12, 100), b"23456789")
        self.assertEqual(lg.read(11, 100), b"")

    def test_an_unusable_state_directory_leaves_output_in_memory(self):
        blocker = os.path.join(self.dir, "file")
        with open(blocker, "w"):
            pass
        with mock.patch.object(holder, "log") as logged:
            lg = holder.OutputLog(os.path.join(blocker, "t1"))
        self.assertIsNone(lg.dir)
        self.assertIn("output kept in memory only", logged.call_args[0][0])
        lg.append(b"abc")
        self.assertEqual(lg.read(0, 10), b"abc")

    def test_a_new_log_clears_what_an_earlier_holder_left_in_its_directory(self):
        os.makedirs(os.path.join(self.dir, "t1"))
        with open(os.path.join(self.dir, "t1", "%016d.seg" % 0), "wb") as f:
            f.write(b"old")
        lg = self.log()
        self.assertEqual(os.listdir(lg.dir), [])
        self.assertEqual(lg.end, 0)

    def test_save_and_restore_go_on_at_the_same_offsets(self):
        lg = holder.OutputLog(os.path.join(self.dir, "t1"))
        for i in range(10):
            lg.append(bytes([97 + i]) * 5)
        saved = json.loads(json.dumps(lg.save(os.path.join(self.dir, "t1.ram"))))  # as the handover file carries it
        self.assertEqual(set(saved), {"dir", "ramStart", "ramFile", "segments"})
        for _, _, fd in lg.segments:
            os.close(fd)  # the process that saved it is gone; its files stay
        again = holder.OutputLog(os.path.join(self.dir, "t1"), saved)
        self.addCleanup(again.close)
        self.assertEqual((again.end, again.oldest, again.ram_offset), (lg.end, lg.oldest, lg.ram_offset))
        offset, got = again.oldest, b""
        while offset < again.end:
            chunk = again.read(offset, 100)
            got += chunk
            offset += len(chunk)
        self.assertEqual(got, b"".join(bytes([97 + i]) * 5 for i in range(10))[again.oldest :])
        again.append(b"zz")
        self.assertEqual(again.read(50, 10), b"zz")

    def test_close_removes_the_segment_files(self):
        lg = holder.OutputLog(os.path.join(self.dir, "t1"))
        lg.append(b"x" * 40)
        self.assertTrue(os.listdir(lg.dir))
        directory = lg.dir
        lg.close()
        self.assertEqual(os.listdir(directory), [])


class ReadersTest(unittest.TestCase):
    """OPEN's `from` and `tail`, GONE for bytes no longer held, and a log cut short."""

    def setUp(self):
        for name, value in (("RAM_BYTES", 8), ("SEGMENT_BYTES", 16), ("DISK_BYTES", 32)):
            patcher = mock.patch.object(holder, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_open_reads_from_the_offset_asked_for_the_tail_or_the_end(self):
        with Harness(self) as h:
            term, _ = h.bare_terminal()
            term.log.append(b"0123456789")
            peer = h.connect()
            for fields, start in (({"from": 3}, 3), ({"from": -1}, 10), ({"from": -1, "tail": 4}, 6), ({"from": 11}, 10), ({"from": "3"}, 10)):
                with self.subTest(fields):
                    name, opened = peer.open(mode="read", **fields)
                    self.assertEqual(name, "OPENED")
                    self.assertEqual((opened["start"], opened["end"], opened["oldest"], opened["spawned"]), (start, 10, 0, False))
                    if start < 10:
                        self.assertEqual(peer.output("t1", lambda d: len(d) >= 10 - start), b"0123456789"[start:])

    def test_a_tail_longer_than_what_is_held_starts_at_the_oldest_byte(self):
        with Harness(self) as h:
            term, _ = h.bare_terminal()
            for i in range(8):
                term.log.append(bytes([65 + i]) * 8)
            peer = h.connect()
            _, opened = peer.open(mode="read", tail=1000)
            self.assertEqual((opened["start"], opened["oldest"], opened["end"]), (32, 32, 64))

    def test_bytes_below_the_oldest_are_gone(self):
        with Harness(self) as h:
            term, _ = h.bare_terminal()
            for i in range(8):
                term.log.append(bytes([65 + i]) * 8)
            peer = h.connect()
            self.assertEqual(peer.open(mode="read", **{"from": 31}), ("GONE", {"id": "t1", "requested": 31, "oldest": 32}))
            name, opened = peer.open(mode="read", **{"from": 32})
            self.assertEqual(opened["start"], 32)

    def test_a_reader_left_behind_by_the_ring_is_told_gone(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            peer = h.connect()
            peer.open(mode="read", **{"from": 0})
            peer.conn.readers["t1"].offset = 0
            for i in range(8):
                term.log.append(bytes([65 + i]) * 8)  # written while the reader was not pumped
            os.write(slave, b"!")  # the shell's next output pumps it (and the ring drops one more segment)
            (gone,) = peer.wait_for(lambda fr: fr[0] == "GONE")
            self.assertEqual(gone[1], {"id": "t1", "requested": 0, "oldest": 48})
            self.assertNotIn("t1", peer.conn.readers)

    def test_a_segment_cut_short_sends_the_reader_on_at_the_tail(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            for i in range(4):
                term.log.append(bytes([65 + i]) * 8)
            os.ftruncate(term.log.segments[0][2], 0)  # the disk lost the first segment's bytes
            peer = h.connect()
            with mock.patch.object(holder, "log") as logged:
                peer.open(mode="read", **{"from": 0})
                (gone,) = peer.wait_for(lambda fr: fr[0] == "GONE")
            self.assertEqual(gone[1], {"id": "t1", "requested": 0, "oldest": 32})
            self.assertIn("no bytes at 0 of 32", logged.call_args[0][0])


class OnceOnlyInputTest(unittest.TestCase):
    """Input is numbered per writer and applied once, whatever is resent."""

    def test_a_resent_seq_is_not_applied_again(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            term.input("w", 1, b"ab")
            term.input("w", 2, b"cd")
            term.input("w", 1, b"ab")  # a resend after a reconnect
            term.input("w", 2, b"cd")
            term.input("w", 3, b"e")
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 5, "input"), b"abcde")
            time.sleep(0.05)
            self.assertEqual(drain_fd(slave), b"")
            self.assertEqual(term.last_seq, {"w": 3})

    def test_a_seq_older_than_the_last_applied_is_only_acknowledged(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            term.input("w", 5, b"five")
            term.input("w", 4, b"four")  # out of order: taken for a resend of what came before 5
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 4, "input"), b"five")
            time.sleep(0.05)
            self.assertEqual(drain_fd(slave), b"")
            self.assertEqual(term.last_seq, {"w": 5})

    def test_each_writer_numbers_its_own_input(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            term.input("server-a", 1, b"A")
            term.input("server-b", 1, b"B")
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 2, "input"), b"AB")
            self.assertEqual(term.last_seq, {"server-a": 1, "server-b": 1})

    def test_the_oldest_writers_are_forgotten_beyond_max_writers(self):
        with Harness(self) as h:
            term = holder.Terminal(h.holder, "t1")  # no shell (yet, or any more): seqs are kept all the same
            for i in range(holder.MAX_WRITERS):
                term.input("w%d" % i, 1, b"x")
            term.input("w0", 2, b"x")  # w0 is now the newest
            term.input("new", 1, b"x")
            self.assertEqual(len(term.last_seq), holder.MAX_WRITERS)
            self.assertNotIn("w1", term.last_seq)
            self.assertEqual((term.last_seq["w0"], list(term.last_seq)[-1]), (2, "new"))

    def test_over_a_connection_input_is_acknowledged_and_a_resend_applied_once(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            peer = h.connect()
            self.assertEqual(peer.open()[1]["lastSeq"], 0)
            peer.input("t1", 1, "日本語".encode())
            (ack,) = peer.wait_for(lambda fr: fr[0] == "ACK")
            self.assertEqual(ack[1], {"id": "t1", "seq": 1})
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 9, "input"), "日本語".encode())
            # A new connection of the same writer learns what was applied, and its resend is only acked.
            again = h.connect()
            self.assertEqual(again.open()[1]["lastSeq"], 1)
            again.input("t1", 1, "日本語".encode())
            again.input("t1", 2, b"!")
            (ack,) = again.wait_for(lambda fr: fr[0] == "ACK")
            self.assertEqual(ack[1], {"id": "t1", "seq": 2})
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 1, "input"), b"!")

    def test_input_as_is_numbered_by_the_named_writer(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            one, two = h.connect(), h.connect()
            one.open(writer="process-a")
            two.open(writer="process-b")
            one.input_as("t1", "browser", 1, b"ls\r")
            (ack,) = one.wait_for(lambda fr: fr[0] == "ACK_AS")
            self.assertEqual(ack[1], {"id": "t1", "writer": "browser", "seq": 1})
            two.input_as("t1", "browser", 1, b"ls\r")  # the same keystrokes relayed by another process
            two.input_as("t1", "browser", 2, b"pwd\r")
            (ack,) = two.wait_for(lambda fr: fr[0] == "ACK_AS")
            self.assertEqual(ack[1]["seq"], 2)
            self.assertEqual(read_fd(slave, lambda d: len(d) >= 7, "input"), b"ls\rpwd\r")
            time.sleep(0.05)
            self.assertEqual(drain_fd(slave), b"")

    def test_a_reader_may_not_write(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            peer = h.connect()
            peer.open(mode="read")
            peer.input("t1", 1, b"rm -rf /\r")
            peer.send(holder.json_frame(holder.T_RESIZE, {"id": "t1", "cols": 10, "rows": 10}))
            errors = peer.wait_for(lambda fr: fr[0] == "ERROR", count=2)
            for _, error in errors:
                self.assertEqual(error, {"id": "t1", "message": "terminal t1 is not open for writing on this connection"})
            self.assertEqual(term.last_seq, {})
            self.assertEqual(drain_fd(slave), b"")
            self.assertEqual(term.size, (24, 80))


class LimitsTest(unittest.TestCase):
    def test_sizes_are_positive_integers_capped_at_1000(self):
        for bad in (0, -1, "80", 1.5, None, [80]):
            with self.subTest(bad), self.assertRaises(ValueError):
                holder.bounded(bad, 1000)
        self.assertEqual(holder.bounded(5000, 1000), 1000)
        self.assertEqual(holder.bounded(1, 1000), 1)

    def test_a_frame_of_max_frame_bytes_is_read_one_more_closes_the_connection(self):
        with Harness(self) as h:
            peer = h.connect()
            (most,) = [f for f in GOLDEN["frames"] if f["name"] == "input-as-max-frame"]
            data = expand_hex(most["hex"])
            self.assertEqual(struct.unpack_from(">I", data)[0], holder.MAX_FRAME)
            peer.send(data)
            ((_, error),) = peer.wait_for(lambda fr: fr[0] == "ERROR")  # read whole: t1 is not open here
            self.assertEqual(error["id"], "t1")
            peer.send(struct.pack(">IB", holder.MAX_FRAME + 1, holder.T_INPUT))
            peer.wait_closed()

    def test_open_caps_the_terminal_size(self):
        with Harness(self) as h:
            term, _ = h.bare_terminal()
            peer = h.connect()
            peer.open(cols=5000, rows=3)
            self.assertEqual(term.size, (3, 1000))
            peer.send(holder.json_frame(holder.T_RESIZE, {"id": "t1", "cols": 100, "rows": 30}))
            peer.send(holder.json_frame(holder.T_DETACH, {"id": "t1"}))
            peer.send(holder.json_frame(holder.T_RESIZE, {"id": "t1", "cols": 1, "rows": 1}))  # after DETACH: refused
            peer.wait_for(lambda fr: fr[0] == "ERROR")
            self.assertEqual(term.size, (30, 100))

    def test_an_open_without_a_size_leaves_the_shells_size(self):
        # A server process whose first viewer is read-only has no writer's size yet: a resize to a
        # default there made bash redraw its prompt in the learner's terminal.
        with Harness(self) as h:
            term, _ = h.bare_terminal()
            h.connect().open(cols=132, rows=40)
            self.assertEqual(term.size, (40, 132))
            peer = h.connect()
            msg = {"id": "t1", "from": -1, "tail": 0, "writer": "w2", "mode": "write"}
            peer.send(holder.json_frame(holder.T_OPEN, msg))
            peer.wait_for(lambda fr: fr[0] == "OPENED")
            self.assertEqual(term.size, (40, 132))

    def test_an_error_of_the_holders_own_code_closes_that_connection_only(self):
        with Harness(self) as h:
            term, slave = h.bare_terminal()
            victim, bystander = h.connect(), h.connect()
            victim.open()
            bystander.open(mode="read")
            with mock.patch.object(holder.Terminal, "resize", side_effect=RuntimeError("a bug")), mock.patch.object(holder, "log"):
                victim.send(holder.json_frame(holder.T_RESIZE, {"id": "t1", "cols": 77, "rows": 24}))
                victim.wait_closed()
            self.assertEqual(h.holder.faults, 1)
            os.write(slave, b"still here")
            self.assertEqual(bystander.output("t1", lambda d: b"still here" in d), b"still here")


class ShellTest(unittest.TestCase):
    """A real shell on a real PTY, spawned by the holder's own code. /bin/sh with a home in a
    temporary directory (the user database is the far edge): a login shell starts in milliseconds."""

    def setUp(self):
        self.home = tempfile.mkdtemp(prefix="labdeck-holder-home-")
        self.addCleanup(shutil.rmtree, self.home, True)
        me = holder.pwd.getpwuid(os.getuid())
        user = types.SimpleNamespace(pw_name=me.pw_name, pw_dir=self.home, pw_shell="/bin/sh")
        patcher = mock.patch.object(holder, "pwd", types.SimpleNamespace(getpwuid=lambda uid: user))
        patcher.start()
        self.addCleanup(patcher.stop)
        # SIGCHLD wakes the loop, as in run(): the holder collects its shells' statuses.
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old_fd = signal.set_wakeup_fd(wake_w)
        old_handler = signal.signal(signal.SIGCHLD, lambda *_: None)
        self.addCleanup(os.close, wake_r)
        self.addCleanup(os.close, wake_w)
        self.addCleanup(signal.signal, signal.SIGCHLD, old_handler)
        self.addCleanup(signal.set_wakeup_fd, old_fd)
        self.wake_r = wake_r

    def harness(self):
        h = Harness(self)
        h.__enter__()
        self.addCleanup(h.__exit__, None, None, None)
        h.holder.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        return h

    def test_a_shell_runs_answers_input_replays_its_log_and_exits(self):
        h = self.harness()
        peer = h.connect()
        _, opened = peer.open("sh1", cols=100, rows=30)
        self.assertEqual((opened["spawned"], opened["start"], opened["lastSeq"]), (True, 0, 0))
        peer.input("sh1", 1, b"echo hi-$((6*7)) $TERM; pwd; stty size\r")
        out = peer.output("sh1", lambda d: b"30 100\r\n" in d)
        self.assertIn(b"hi-42 xterm-256color\r\n", out)
        self.assertIn(self.home.encode() + b"\r\n", out)  # the shell starts in its user's home
        # A second viewer reads the same bytes from offset 0, and the next ones live.
        watcher = h.connect()
        _, opened = watcher.open("sh1", mode="read", **{"from": 0})
        self.assertEqual(opened["spawned"], False)
        replay = watcher.output("sh1", lambda d: len(d) >= len(out))
        self.assertEqual(replay[: len(out)], out)
        peer.input("sh1", 2, "echo 日本語; exit 3\r".encode())
        (exit_frame,) = watcher.wait_for(lambda fr: fr[0] == "EXIT")
        both = replay + watcher.output("sh1", lambda d: True)
        self.assertIn("日本語\r\n".encode(), both)
        self.assertEqual(exit_frame[1]["end"], h.holder.terminals["sh1"].log.end)
        deadline = time.monotonic() + WAIT_S
        while h.holder.statuses.get("sh1") != 3 and time.monotonic() < deadline:
            h.turn()
        self.assertEqual(h.holder.statuses.get("sh1"), 3)
        self.assertFalse(h.holder.terminals["sh1"].running)

    def test_a_new_open_after_exit_starts_a_fresh_shell_and_offsets_go_on(self):
        h = self.harness()
        peer = h.connect()
        peer.open("sh2")
        peer.input("sh2", 1, b"exit\r")
        peer.wait_for(lambda fr: fr[0] == "EXIT")
        end = h.holder.terminals["sh2"].log.end
        self.assertGreater(end, 0)
        _, opened = peer.open("sh2")
        self.assertEqual((opened["spawned"], opened["start"], opened["lastSeq"]), (True, end, 1))
        peer.input("sh2", 2, b"echo again\r")
        out = peer.output("sh2", lambda d: b"again\r\n" in d)
        self.assertIn(b"again", out)
        peer.send(holder.json_frame(holder.T_KILL, {"id": "sh2"}))  # hang up: the shell ends
        (exit_frame,) = peer.wait_for(lambda fr: fr[0] == "EXIT")
        self.assertGreater(exit_frame[1]["end"], end)


# Runs the holder file's main() in a child python3 with the user database's entry for this user
# pointing at /bin/sh and a temporary home (the far edge, as ShellTest does in process).
LAUNCH = """
import importlib.machinery, importlib.util, sys, types
path, home = sys.argv[1], sys.argv[2]
loader = importlib.machinery.SourceFileLoader("labdeck_holder", path)
module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(module)
me = module.pwd.getpwuid(module.os.getuid())
user = types.SimpleNamespace(pw_name=me.pw_name, pw_dir=home, pw_shell="/bin/sh")
module.pwd = types.SimpleNamespace(getpwuid=lambda uid: user)
module.main(sys.argv[3:])
"""

# The same, starting the daemon as a release before the keeper did: no keeper, the daemon itself.
LAUNCH_BARE = LAUNCH.replace(
    "module.main(sys.argv[3:])",
    "args = sys.argv[3:]\n"
    "holder = module.Holder(args[1], args[3])\n"
    "holder.listen()\n"
    "open(args[5], 'w').write('%d\\n' % module.os.getpid())\n"
    "holder.run(args)\n",
)


class Daemon:
    """Stands in for a Harness to Peer: the holder runs in its own processes, a turn only waits."""

    def __init__(self, test):
        self.test = test

    def turn(self):
        time.sleep(0.005)


class KeeperTest(unittest.TestCase):
    """A normal start as a process of its own: the keeper, its daemon, real shells. The daemon is
    killed hard and a new one, started by the keeper, goes on with the same shells."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="labdeck-keeper-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.sock_path = os.path.join(self.dir, "run", "holder.sock")
        self.pid_file = os.path.join(self.dir, "keeper.pid")
        self.log = open(os.path.join(self.dir, "holder.log"), "w+")
        self.addCleanup(self.log.close)
        argv = ["--socket", self.sock_path, "--state-dir", os.path.join(self.dir, "state"), "--pid-file", self.pid_file]
        self.proc = subprocess.Popen(
            [sys.executable, "-B", "-c", LAUNCH, os.path.join(HERE, "labdeck-holder"), self.dir] + argv,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True,
        )
        self.addCleanup(self.kill_all)
        self.keeper = int(self.wait_until(lambda: self.read_pid_file(), "the pid file"))
        self.assertEqual(self.keeper, self.proc.pid)

    def read_pid_file(self):
        try:
            with open(self.pid_file) as f:
                return f.read().strip()
        except FileNotFoundError:
            return ""

    def kill_all(self):
        """Everything of this test: the keeper's session (keeper, daemon) and the shells' own sessions."""
        for pid in [self.proc.pid] + self.children(self.proc.pid):
            for group in (lambda p: os.killpg(p, signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
                try:
                    group(pid)
                except OSError:
                    pass
        self.proc.wait()

    def children(self, pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def wait_until(self, value, what):
        deadline = time.monotonic() + WAIT_S
        while True:
            got = value()
            if got:
                return got
            if time.monotonic() > deadline:
                self.log.seek(0)
                self.fail("waited for %s; holder log:\n%s" % (what, self.log.read()[-2000:]))
            time.sleep(0.01)

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.wait_until(lambda: sock.connect_ex(self.sock_path) == 0, "the socket")
        peer = Peer(Daemon(self), sock, None)
        self.addCleanup(sock.close)
        (hello,) = peer.wait_for(lambda fr: fr[0] == "HELLO")
        return peer, hello[1]

    def test_a_daemon_killed_hard_is_replaced_and_the_same_shells_go_on(self):
        peer, hello = self.connect()
        self.assertIn(hello["pid"], self.children(self.keeper))  # the daemon is the keeper's child
        peer.open("k1")
        peer.input("k1", 1, b"X=kept; echo shell-$$\r")
        shell = peer.output("k1", lambda d: re.search(rb"shell-\d+\r\n", d) is not None)
        shell_pid = re.search(rb"shell-(\d+)", shell).group(1)
        # Output the shell writes while no daemon runs (the keeper is held stopped meanwhile): it
        # waits in the PTY, and the next daemon reads it.
        peer.input("k1", 2, b"(sleep 0.3; echo while-away) &\r")
        peer.output("k1", lambda d: b"\n" in d)
        os.kill(self.keeper, signal.SIGSTOP)
        self.addCleanup(os.kill, self.keeper, signal.SIGCONT)
        os.kill(hello["pid"], signal.SIGKILL)
        self.wait_until(lambda: peer.read() or peer.eof, "the connection to close")
        time.sleep(0.6)
        self.assertIn(int(shell_pid), self.children(self.keeper))  # re-parented to the keeper
        os.kill(self.keeper, signal.SIGCONT)
        # A new daemon: another pid and instance, the same keeper, the shell its child no longer.
        peer, again = self.connect()
        self.assertNotEqual((again["pid"], again["instance"]), (hello["pid"], hello["instance"]))
        self.assertEqual(int(self.read_pid_file()), self.keeper)
        _, opened = peer.open("k1", **{"from": 0})
        self.assertFalse(opened["spawned"])
        peer.input("k1", 3, b"echo again-$X-$$\r")
        out = peer.output("k1", lambda d: b"again-kept-" + shell_pid + b"\r\n" in d)
        self.assertIn(b"while-away", out)
        # The shell ends: the keeper collects it (its parent now) and tells the daemon its status,
        # which may come after the PTY's end (that EXIT then says null): a later reader is told it.
        peer.input("k1", 4, b"exit 7\r")
        peer.wait_for(lambda fr: fr[0] == "EXIT")
        deadline = time.monotonic() + WAIT_S
        while True:
            peer.send(holder.json_frame(holder.T_OPEN, {"id": "k1", "from": -1, "cols": 80, "rows": 24, "mode": "read"}))
            (exit_frame,) = peer.wait_for(lambda fr: fr[0] == "EXIT")
            if exit_frame[1]["status"] == 7 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(exit_frame[1]["status"], 7)

    def test_a_new_shell_after_the_restart_is_handed_to_the_keeper_too(self):
        peer, hello = self.connect()
        os.kill(hello["pid"], signal.SIGKILL)
        peer, again = self.connect()
        peer.open("k2")
        peer.input("k2", 1, b"Y=second; echo ok\r")
        peer.output("k2", lambda d: b"ok\r\n" in d)
        os.kill(again["pid"], signal.SIGKILL)
        peer, third = self.connect()
        peer.open("k2", **{"from": 0})
        peer.input("k2", 2, b"echo got-$Y\r")
        peer.output("k2", lambda d: b"got-second\r\n" in d)

    def test_an_in_place_upgrade_keeps_the_keeper_and_a_later_hard_death_the_shells(self):
        peer, hello = self.connect()
        peer.open("k4")
        peer.input("k4", 1, b"Z=upgraded; echo ok\r")
        peer.output("k4", lambda d: b"ok\r\n" in d)
        os.kill(hello["pid"], signal.SIGUSR2)  # execs the file again, the same pid (header)
        self.wait_until(lambda: peer.read() or peer.eof, "the connection to close (upgrade)")
        peer, upgraded = self.connect()
        self.assertEqual((upgraded["pid"], upgraded["instance"]), (hello["pid"], hello["instance"]))
        # A shell started by the upgraded daemon (the user database is the real one after the exec):
        # the keeper is told of it too.
        peer.open("k5")
        peer.input("k5", 1, b"W=after; echo ok-$W\r")
        peer.output("k5", lambda d: b"ok-after\r\n" in d)
        os.kill(upgraded["pid"], signal.SIGKILL)
        self.wait_until(lambda: peer.read() or peer.eof, "the connection to close (kill)")
        peer, again = self.connect()
        self.assertNotEqual(again["pid"], hello["pid"])
        peer.open("k4", **{"from": 0})
        peer.input("k4", 2, b"echo still-$Z\r")
        peer.output("k4", lambda d: b"still-upgraded\r\n" in d)
        _, opened = peer.open("k5", **{"from": 0})
        self.assertFalse(opened["spawned"])
        peer.input("k5", 2, b"echo still-$W\r")
        peer.output("k5", lambda d: b"still-after\r\n" in d)
        peer.send(holder.json_frame(holder.T_KILL, {"id": "k5"}))  # a login shell of this machine's user: hung up here

    def test_a_daemon_without_a_keeper_upgraded_in_place_becomes_kept(self):
        # A release before the keeper: the daemon itself is the process started (LAUNCH_BARE).
        self.kill_all()
        os.unlink(self.pid_file)
        self.sock_path = os.path.join(self.dir, "run-bare", "holder.sock")  # the killed daemon may not be gone yet
        argv = ["--socket", self.sock_path, "--state-dir", os.path.join(self.dir, "state"), "--pid-file", self.pid_file]
        self.proc = subprocess.Popen(
            [sys.executable, "-B", "-c", LAUNCH_BARE, os.path.join(HERE, "labdeck-holder"), self.dir] + argv,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True,
        )
        peer, hello = self.connect()
        self.assertEqual(hello["pid"], self.proc.pid)
        peer.open("k6")
        peer.input("k6", 1, b"V=bare; echo shell-$$\r")
        shell = peer.output("k6", lambda d: re.search(rb"shell-\d+\r\n", d) is not None)
        shell_pid = re.search(rb"shell-(\d+)", shell).group(1)
        os.kill(hello["pid"], signal.SIGUSR2)
        self.wait_until(lambda: peer.read() or peer.eof, "the connection to close (upgrade)")
        peer, upgraded = self.connect()
        # The process that was the daemon keeps the shells as their keeper; its child serves them,
        # the same instance: a reader goes on at its offset.
        self.assertEqual(upgraded["instance"], hello["instance"])
        self.assertEqual(sorted(self.children(self.proc.pid)), sorted([int(shell_pid), upgraded["pid"]]))
        self.assertEqual(self.read_pid_file(), str(self.proc.pid))
        with open("/proc/%d/comm" % self.proc.pid) as f:
            self.assertEqual(f.read().strip(), "labdeck-keeper")
        _, opened = peer.open("k6", **{"from": len(shell)})
        self.assertEqual(opened["start"], len(shell))
        os.kill(upgraded["pid"], signal.SIGKILL)
        self.wait_until(lambda: peer.read() or peer.eof, "the connection to close (kill)")
        peer, again = self.connect()
        self.assertNotEqual(again["instance"], hello["instance"])
        peer.open("k6", **{"from": 0})
        peer.input("k6", 2, b"echo again-$V-$$\r")
        peer.output("k6", lambda d: b"again-bare-" + shell_pid + b"\r\n" in d)
        # The shell's end reaches the daemon from the keeper (the shell's parent).
        peer.input("k6", 3, b"exit 5\r")
        peer.wait_for(lambda fr: fr[0] == "EXIT")

    def test_sigterm_to_the_keeper_stops_the_daemon_and_the_keeper(self):
        peer, hello = self.connect()
        peer.open("k3")
        peer.input("k3", 1, b"echo up\r")
        peer.output("k3", lambda d: b"up\r\n" in d)
        os.kill(self.keeper, signal.SIGTERM)
        self.assertEqual(self.proc.wait(timeout=WAIT_S), 0)
        self.assertFalse(os.path.exists(self.sock_path))
        self.wait_until(lambda: not os.path.exists("/proc/%d" % hello["pid"]), "the daemon to end")

    def test_a_second_start_finds_the_first_listening_and_exits(self):
        self.connect()
        second = subprocess.run(
            [sys.executable, "-B", "-c", LAUNCH, os.path.join(HERE, "labdeck-holder"), self.dir, "--socket", self.sock_path],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=WAIT_S,
        )
        self.assertEqual(second.returncode, 0)
        self.assertIn(b"already listens", second.stderr)


if __name__ == "__main__":
    unittest.main()
