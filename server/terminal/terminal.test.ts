/**
 * Terminal core with an in-memory PTY (the far edge faked; the real SSH path is covered
 * by gateway.test.ts): attach/resume/snapshot, read-only viewers, backpressure, early input.
 */
import type { TerminalNotice } from "./protocol";
import { describe, expect, it } from "vitest";
import type { MachineState } from "./protocol";
import { Terminal, type Viewer } from "./terminal";
import { type InputSeq, type PtyChannel, type PtyConnector, type PtyHandlers, type PtySize } from "./pty";

class InMemoryPty implements PtyConnector {
  readonly machine = "node01";
  handlers: PtyHandlers | null = null;
  written: string[] = [];
  resizes: string[] = [];
  paused = false;
  opens = 0;
  froms: (number | undefined)[] = [];
  inputs: (InputSeq | undefined)[] = [];
  /** Notices the terminal reported back (what a recording connector records). */
  reported: TerminalNotice[] = [];
  open(_size: unknown, handlers: PtyHandlers, from?: number): Promise<PtyChannel> {
    this.opens++;
    this.froms.push(from);
    this.handlers = handlers;
    return Promise.resolve({
      write: (d, input) => {
        this.written.push(d);
        this.inputs.push(input);
      },
      resize: (size) => void this.resizes.push(`${size.cols}x${size.rows}`),
      pause: () => void (this.paused = true),
      resume: () => void (this.paused = false),
      close: () => {},
    });
  }
  emit(text: string, offset?: number) {
    this.handlers!.onData(Buffer.from(text), offset);
  }
  noticed(notice: TerminalNotice): void {
    this.reported.push(notice);
  }
}

class RecordingViewer implements Viewer {
  out: { offset: number; text: string }[] = [];
  resets: number[] = [];
  states: MachineState[] = [];
  accept = true;
  snapshots: { offset: number; data: string }[] = [];
  notices: string[] = [];
  acks: number[] = [];
  constructor(
    readonly mode: "write" | "read" = "write",
    readonly writer?: string,
  ) {}
  sendSnapshot(offset: number, data: string) {
    this.snapshots.push({ offset, data });
  }
  sendNotice(notice: TerminalNotice) {
    this.notices.push(notice);
    this.shown.push(`[${notice}]`);
  }
  /** Output and notices in the order the viewer was sent them. */
  shown: string[] = [];
  sendAck(seq: number) {
    this.acks.push(seq);
  }
  sendOutput(offset: number, chunk: Uint8Array) {
    this.out.push({ offset, text: Buffer.from(chunk).toString() });
    this.shown.push(Buffer.from(chunk).toString());
    return this.accept;
  }
  sendReset(offset: number) {
    this.resets.push(offset);
  }
  sendStatus(state: MachineState) {
    this.states.push(state);
  }
  sizes: string[] = [];
  sendSize(size: { cols: number; rows: number }) {
    this.sizes.push(`${size.cols}x${size.rows}`);
  }
  ended: string[] = [];
  end(reason: string) {
    this.ended.push(reason);
  }
  text() {
    return this.out.map((o) => o.text).join("");
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("Terminal (in-memory PTY)", () => {
  it("queues input typed before the shell is open and sends it once open", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const viewer = new RecordingViewer();
    terminal.attach(viewer, 0);
    terminal.input(viewer, "echo hi\r");
    await tick();
    expect(pty.written).toEqual(["echo hi\r"]);
    expect(viewer.states.at(-1)).toBe("connected");
  });

  it("leaves the shell's size alone while only a read-only viewer watches (a watcher first in a process after a restart)", async () => {
    const opened: (PtySize | undefined)[] = [];
    const pty = new InMemoryPty();
    const sized: PtyConnector = { machine: "node01", open: (size, handlers, from) => (opened.push(size), pty.open(size, handlers, from)) };
    const terminal = new Terminal(sized);
    terminal.attach(new RecordingViewer("read"), 0);
    await tick();
    expect(opened).toEqual([undefined]);
    expect(pty.resizes).toEqual([]);
    // The learner's page then gives its size.
    terminal.attach(new RecordingViewer(), 0, { cols: 120, rows: 33 });
    expect(pty.resizes).toEqual(["120x33"]);
  });

  it("gives the PTY the writer's size when the writer attached while the shell was being opened (prewarm), before its input", async () => {
    const pty = new InMemoryPty();
    const opened: (PtySize | undefined)[] = [];
    let finish: () => void = () => {};
    const slow: PtyConnector = {
      machine: "node01",
      open: (size, handlers, from) => {
        opened.push(size);
        return new Promise((resolve) => (finish = () => resolve(pty.open(size, handlers, from))));
      },
    };
    const terminal = new Terminal(slow);
    terminal.prewarm(); // the lab just became ready: the login starts at the default size
    const viewer = new RecordingViewer();
    terminal.attach(viewer, 0, { cols: 132, rows: 40 }); // the page attaches mid-login
    terminal.input(viewer, "stty size\r");
    finish();
    await tick();
    expect(opened).toEqual([undefined]); // no writer's size yet: the shell keeps its own
    expect(pty.resizes).toEqual(["132x40"]);
    expect(pty.written).toEqual(["stty size\r"]);
    // An open that already had the right size is not resized again.
    const direct = new InMemoryPty();
    const second = new Terminal(direct);
    second.attach(new RecordingViewer(), 0, { cols: 100, rows: 30 });
    await tick();
    expect(direct.resizes).toEqual([]);
  });

  it("resumes a viewer from its offset and sends the current screen to one whose offset is gone", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty, { replayBufferBytes: 10 });
    const first = new RecordingViewer();
    terminal.attach(first, 0);
    await tick();
    pty.emit("abcd");
    pty.emit("efgh");
    terminal.detach(first);
    pty.emit("ijkl"); // buffer now holds efgh ijkl (abcd trimmed)
    const back = new RecordingViewer();
    expect(terminal.attach(back, 8)).toBe(8);
    expect(back.text()).toBe("ijkl");
    expect(back.resets).toEqual([]);
    const stale = new RecordingViewer();
    terminal.attach(stale, 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(stale.resets).toEqual([]);
    expect(stale.snapshots).toHaveLength(1);
    expect(stale.snapshots[0]!.offset).toBe(12);
    expect(stale.snapshots[0]!.data).toContain("abcdefghijkl"); // the screen, not only what is buffered
    pty.emit("mn");
    expect(stale.out).toEqual([{ offset: 12, text: "mn" }]);
  });

  it("starts a new process's first read at the resuming viewer's offset and passes input seqs on", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const viewer = new RecordingViewer("write", "page1");
    terminal.attach(viewer, 5000);
    terminal.input(viewer, "a", 7);
    await tick();
    expect(pty.froms).toEqual([5000]);
    expect(pty.inputs).toEqual([{ writer: "page1", seq: 7 }]);
    pty.emit("xyz", 5000);
    expect(viewer.out).toEqual([{ offset: 5000, text: "xyz" }]);
    pty.handlers!.onInputAck!("page1", 7);
    pty.handlers!.onInputAck!("other", 9);
    expect(viewer.acks).toEqual([7]);
    // The log jumps (a reader that fell behind went on from the tail): a snapshot, never a gap.
    pty.emit("later", 9000);
    await new Promise((r) => setTimeout(r, 50));
    expect(viewer.snapshots.map((s) => s.offset)).toEqual([9005]);
    expect(viewer.out.map((o) => o.offset)).toEqual([5000]);
  });

  it("ignores input and resize from read-only viewers", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const watcher = new RecordingViewer("read");
    terminal.attach(watcher, 0);
    await tick();
    expect(terminal.input(watcher, "rm -rf /\r")).toBe(false);
    expect(terminal.resize(watcher, { cols: 10, rows: 5 })).toBe(false);
    expect(pty.written).toEqual([]);
  });

  it("tells read-only viewers the writer's size on attach and on every change, never the writer itself", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const learner = new RecordingViewer("write");
    terminal.attach(learner, 0, { cols: 132, rows: 40 });
    await tick();
    const watcher = new RecordingViewer("read");
    terminal.attach(watcher, 0, { cols: 40, rows: 10 }); // the watcher's own pane size is ignored
    expect(watcher.sizes).toEqual(["132x40"]);
    terminal.resize(learner, { cols: 100, rows: 30 });
    terminal.resize(learner, { cols: 100, rows: 30 }); // unchanged: not sent again
    expect(terminal.resize(watcher, { cols: 20, rows: 5 })).toBe(false);
    expect(watcher.sizes).toEqual(["132x40", "100x30"]);
    expect(learner.sizes).toEqual([]);
    expect(pty.resizes).toEqual(["100x30", "100x30"]);
  });

  it("pauses the shell only while every viewer is backed up, then catches the slow one up", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const fast = new RecordingViewer();
    const slow = new RecordingViewer();
    terminal.attach(fast, 0);
    terminal.attach(slow, 0);
    await tick();
    slow.accept = false;
    pty.emit("one");
    expect(pty.paused).toBe(false); // fast still reads
    fast.accept = false;
    pty.emit("two");
    expect(pty.paused).toBe(true);
    pty.emit("three"); // bytes already in flight from the SSH side still land in the buffer
    slow.accept = true;
    terminal.drained(slow);
    expect(pty.paused).toBe(false);
    expect(slow.text()).toBe("onetwothree");
    fast.accept = true;
    terminal.drained(fast);
    expect(fast.text()).toBe("onetwothree");
  });

  it("re-opens the shell after the connection drops and says so in the output", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const viewer = new RecordingViewer();
    terminal.attach(viewer, 0);
    await tick();
    pty.handlers!.onClose(new Error("connection lost"));
    expect(viewer.states.at(-1)).toBe("unreachable");
    await new Promise((r) => setTimeout(r, 700));
    expect(pty.opens).toBe(2);
    expect(viewer.states.at(-1)).toBe("connected");
    expect(viewer.notices).toContain("reconnected");
    expect(viewer.text()).toBe(""); // notices are not part of the byte stream
    terminal.close();
  });

  it("while its machine is reset, tries nothing through the drops; once the reset ends it connects once", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const viewer = new RecordingViewer();
    terminal.attach(viewer, 0);
    await tick();
    expect(pty.opens).toBe(1);
    terminal.hold();
    // The machine drops the old connection during the reset: no retry while held.
    await new Promise((r) => setTimeout(r, 1_200));
    expect(pty.opens).toBe(1);
    expect(viewer.states.at(-1)).toBe("connecting");
    terminal.reconnectNow();
    await tick();
    expect(pty.opens).toBe(2);
    expect(viewer.states.at(-1)).toBe("connected");
    terminal.close();
  });

  it("shows every notice to read-only viewers as to the writer, and reports it to the connector (which records it)", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const writer = new RecordingViewer("write");
    const watcher = new RecordingViewer("read");
    terminal.attach(writer, 0);
    terminal.attach(watcher, 0);
    await tick();
    pty.handlers!.onNotice!("rebooted"); // the connector's own (a new boot)
    pty.handlers!.onClose(new Error("connection lost"));
    await new Promise((r) => setTimeout(r, 700));
    pty.handlers!.onClose(); // the shell exited
    expect(writer.notices).toEqual(["rebooted", "reconnected", "shellRestarted"]);
    expect(watcher.notices).toEqual(writer.notices);
    expect(pty.reported).toEqual(writer.notices);
    terminal.close();
  });

  it("shows a viewer that comes later the notices at their place in the output it is replayed, once, and none before its offset", async () => {
    const pty = new InMemoryPty();
    const terminal = new Terminal(pty);
    const learner = new RecordingViewer("write");
    terminal.attach(learner, 0);
    await tick();
    pty.emit("$ reboot\r\n$ ");
    pty.handlers!.onNotice!("rebooted");
    pty.emit("$ ");
    pty.handlers!.onNotice!("holderBack"); // after the last byte so far
    expect(learner.shown.join("")).toBe("$ reboot\r\n$ [rebooted]$ [holderBack]");

    const watcher = new RecordingViewer("read"); // opens the watch view now
    terminal.attach(watcher, 0);
    expect(watcher.shown.join("")).toBe(learner.shown.join(""));
    const resumed = new RecordingViewer("write"); // a page that had the output up to the reboot line
    terminal.attach(resumed, 12);
    expect(resumed.shown.join("")).toBe("[rebooted]$ [holderBack]");
    const past = new RecordingViewer("write"); // one that had output past it
    terminal.attach(past, 13);
    expect(past.shown.join("")).toBe(" [holderBack]");

    // A viewer that was shown a notice while it was behind is not shown it again when it catches up.
    const slow = new RecordingViewer("read");
    terminal.attach(slow, 14);
    slow.accept = false;
    pty.emit("x");
    pty.handlers!.onNotice!("shellRestarted");
    pty.emit("y"); // held back: slow is blocked
    slow.accept = true;
    terminal.drained(slow);
    expect(slow.shown.join("")).toBe("[holderBack]x[shellRestarted]y");
    terminal.close();
  });

  it("says a machine is stopped when its provider reports it powered off, without flicker, until it answers", async () => {
    const pty = new InMemoryPty();
    let off = true;
    const terminal = new Terminal(pty, { isPoweredOff: async () => off });
    const viewer = new RecordingViewer();
    terminal.attach(viewer, 0);
    await tick();
    // The machine powers off: the shell's connection drops and new connections fail.
    const open = pty.open.bind(pty);
    pty.open = () => Promise.reject(new Error("connect ECONNREFUSED"));
    pty.handlers!.onClose(new Error("connection lost"));
    await tick();
    expect(viewer.states.at(-1)).toBe("stopped");
    await new Promise((r) => setTimeout(r, 1_700)); // two more failed attempts
    expect(viewer.states.filter((s) => s === "stopped")).toHaveLength(1);
    expect(viewer.states.at(-1)).toBe("stopped");
    // Powered on again: it answers, the shell re-attaches.
    off = false;
    pty.open = open;
    await new Promise((r) => setTimeout(r, 2_500));
    expect(viewer.states.at(-1)).toBe("connected");
    terminal.close();
  });

  it("tells every viewer why when it is closed for good", async () => {
    const terminal = new Terminal(new InMemoryPty());
    const a = new RecordingViewer();
    const b = new RecordingViewer("read");
    terminal.attach(a, 0);
    terminal.attach(b, 0);
    terminal.close("expired");
    expect([a.ended, b.ended]).toEqual([["expired"], ["expired"]]);
  });
});
