/**
 * Shared pieces of the terminal benches (bench/terminal.ts, bench/holder.ts,
 * bench/typing-under-load.ts): a terminal as a byte sink, a raw ssh2 shell, running a command to
 * a marker, typing with echo timing, percentiles, and a process's CPU and I/O from /proc (the
 * netns hosts share this kernel).
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import type { ClientChannel } from "ssh2";
import type { TerminalTestClient } from "../../server/testing/terminal-client";
import { decodeOutput } from "../../server/terminal/protocol";
import { connectSsh, type SshEndpoint } from "../../server/ssh/connect";

/** Longest wait for one keystroke's echo, ms (a key not echoed by then counts as lost). */
export const ECHO_TIMEOUT_MS = 5_000;
/** Longest wait for a short command's marker (new shells are slow), ms. */
export const COMMAND_TIMEOUT_MS = 30_000;
/** Keystrokes per line before "\r" submits it to cat (keeps lines short). */
export const LINE_CHARS = 50;
/** Quiet time after submitting a line, before the next keystroke, ms. */
export const SETTLE_MS = 150;
export const MIB = 1024 * 1024; // bytes
const CLOCK_TICKS = 100; // USER_HZ: /proc/<pid>/stat times are in 1/100 s on Linux

/** One terminal; `sink` gets every output chunk while a measurement listens. */
export interface Term {
  name: string;
  write(data: string): void;
  sink: ((chunk: Buffer) => void) | null;
  close(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = () => process.hrtime.bigint();
export const msSince = (t: bigint) => Number(now() - t) / 1e6;

/** An ssh2 PTY shell straight from sshd: the baseline every terminal path is compared with. */
export async function rawTerm(endpoint: SshEndpoint, size: { cols: number; rows: number }, name = "raw"): Promise<Term> {
  const client = await connectSsh(endpoint);
  const stream = await new Promise<ClientChannel>((resolve, reject) =>
    client.shell({ term: "xterm-256color", cols: size.cols, rows: size.rows }, (e, s) => (e ? reject(e) : resolve(s))),
  );
  const term: Term = { name, sink: null, write: (d) => void stream.write(d), close: async () => void client.end() };
  stream.on("data", (c: Buffer) => term.sink?.(c));
  stream.stderr.on("data", (c: Buffer) => term.sink?.(c));
  return term;
}

/** A gateway terminal (a TerminalTestClient's socket) as a Term. */
export function gatewayTerm(client: TerminalTestClient, name = "gateway"): Term {
  const term: Term = { name, sink: null, write: (d) => client.input(d), close: () => client.close() };
  // Runs after the client's own listener: the client keeps every chunk, which we drop at once so
  // 50 MiB is never retained (nor concatenated) here; offsets are still checked by the client.
  client.ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary) return;
    const frame = decodeOutput(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    client.chunks.length = 0;
    if (frame) term.sink?.(Buffer.from(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength));
  });
  return term;
}

/** Runs `command` and waits for a marker that only the shell's output (not the echo) contains. */
export async function run(term: Term, command: string, timeoutMs = COMMAND_TIMEOUT_MS) {
  const tag = randomBytes(4).toString("hex");
  const needle = Buffer.from(`END${tag}-42`);
  let bytes = 0;
  let chunks = 0;
  let tail = Buffer.alloc(0);
  const started = now();
  const done = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      term.sink = null;
      reject(new Error(`${term.name}: no ${needle} within ${timeoutMs} ms; last output ${JSON.stringify(tail.toString())}`));
    }, timeoutMs);
    term.sink = (chunk) => {
      bytes += chunk.byteLength;
      chunks++;
      // Search the chunk, plus the seam with the previous one; never the whole output.
      const seam = Buffer.concat([tail, chunk.subarray(0, needle.length)]);
      tail = Buffer.from(chunk.subarray(-needle.length));
      if (chunk.includes(needle) || seam.includes(needle)) {
        clearTimeout(timer);
        term.sink = null;
        resolve(msSince(started));
      }
    };
  });
  term.write(`${command}; echo END${tag}-$((6*7))\r`);
  const ms = await done;
  return { ms, bytes, chunks };
}

/**
 * Types `n` printable characters `gapMs` apart (start to start) into `cat` and pushes each echo
 * latency in ms; a key not echoed within ECHO_TIMEOUT_MS is counted in `lost` (or, without
 * `lost`, fails the run).
 */
export async function type(term: Term, n: number, gapMs: number, out: number[], lost?: { count: number }): Promise<void> {
  const alphabet = "abcdefghijklmnopqrstuvwxyz";
  for (let i = 0; i < n; i++) {
    const ch = alphabet[i % alphabet.length]!;
    const code = ch.charCodeAt(0);
    let started = 0n;
    const echoed = new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        term.sink = null;
        if (lost) resolve(null);
        else reject(new Error(`${term.name}: no echo of ${ch} in ${ECHO_TIMEOUT_MS} ms`));
      }, ECHO_TIMEOUT_MS);
      term.sink = (chunk) => {
        if (!chunk.includes(code)) return;
        const ms = msSince(started); // taken in the data callback, not after a promise hop
        clearTimeout(timer);
        term.sink = null;
        resolve(ms);
      };
    });
    started = now();
    term.write(ch);
    const ms = await echoed;
    if (ms === null) lost!.count++;
    else out.push(ms);
    await sleep(Math.max(0, gapMs - (ms ?? gapMs)));
  }
  term.write("\r"); // cat prints the line back; let that pass before the next line
  await sleep(SETTLE_MS);
}

export interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function stats(samples: number[]): Stats {
  if (samples.length === 0) return { n: 0, p50: NaN, p90: NaN, p99: NaN, max: NaN };
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { n: s.length, p50: r(at(50)), p90: r(at(90)), p99: r(at(99)), max: r(s[s.length - 1]!) };
}

/** CPU seconds (user + system) a process has used so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime (fields 14, 15)
}

/**
 * The scheduler's account of one thread (its main thread by default: tid = pid), from
 * /proc/<pid>/task/<tid>/schedstat: time on a CPU, time runnable but waiting for one, and how many
 * times it was given a CPU. Waiting per run is what each wake-up (a keystroke's echo arriving)
 * paid on average before the thread could even start on it.
 */
export async function schedStat(pid: number, tid = pid): Promise<{ runMs: number; waitMs: number; runs: number }> {
  const [run, wait, runs] = (await fs.readFile(`/proc/${pid}/task/${tid}/schedstat`, "utf8")).trim().split(" ").map(Number);
  return { runMs: run! / 1e6, waitMs: wait! / 1e6, runs: runs! };
}

export async function rssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, "utf8");
  return Math.round((Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024) * 10) / 10;
}

/** Bytes a process has read and written through syscalls so far (sockets included): /proc/<pid>/io rchar, wchar. */
export async function ioBytes(pid: number): Promise<{ read: number; written: number }> {
  const io = await fs.readFile(`/proc/${pid}/io`, "utf8");
  return { read: Number(/^rchar:\s+(\d+)/m.exec(io)![1]), written: Number(/^wchar:\s+(\d+)/m.exec(io)![1]) };
}
