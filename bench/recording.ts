/**
 * Recording size of real lab work: the preinstall lab's solutions (labs/preinstall-checks/steps/
 * <id>/solution.sh, in the lab's step order) typed into controlplane's terminal as keystrokes,
 * line by line as a learner types them, with the read-only inspection commands the lesson has the
 * learner run before and after. The terminal is a netns sshd host through the gateway and the
 * holder, recorded by the real recorder into the embedded PostgreSQL.
 *
 * The solutions are typed into a here-document read by `cat > /dev/null`, not run: on netns hosts
 * (which share this machine's kernel and files) swapoff, modprobe, sysctl --system and the edits
 * of /etc/fstab would change this machine. What the recording holds is the same — every keystroke's
 * echo and the shell's prompts (the solutions send their own output to files). The inspection
 * commands (swapon, lsmod, sysctl, ss, free, cat) do run.
 *
 * Prints, in the same run: bytes the browser received (the baseline), the recording's raw bytes,
 * its asciicast file, and both gzip-compressed; and per hour two ways: one pass of the lab
 * (`durationMinutes: 60` in lab.yaml, so one pass ≈ one hour of lab work), and the typing pace of
 * this run sustained for an hour (an upper bound: nobody types without pause for an hour).
 *
 *   flock /tmp/labdeck-test.lock npx tsx bench/recording.ts [--char-ms 40]
 */
import fs from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { z } from "zod";
import { castText, loadCast } from "../server/recordings/asciicast";
import { startTestStack } from "../server/testing/stack";
import { TerminalTestClient } from "../server/testing/terminal-client";
import { benchFlags } from "./lib/flags";

const SUBNET = 115; // third octet of the hosts' 10.213.S.0/24 (unused elsewhere)
const LAB_DIR = path.resolve("labs/preinstall-checks");
const STEPS = ["record-before", "swap-off", "kernel-modules", "sysctl", "port-10250", "memory-facts", "who-fixes"];
const LINE_TIMEOUT_MS = 20_000; // longest wait for one line's prompt, ms
const INSPECT = [
  "swapon --show",
  "grep -v '^#' /etc/fstab",
  "lsmod | grep -E '^(overlay|br_netfilter) '",
  "sysctl net.ipv4.ip_forward",
  "ss -ltn",
  "free -m",
  "cat /proc/meminfo | head -5",
];

const Flags = z.object({ "char-ms": z.coerce.number().int().min(0).max(1000).default(40) });

async function main(): Promise<void> {
  const flags = benchFlags(Flags, "usage: npx tsx bench/recording.ts [--char-ms MS]");
  const stack = await startTestStack({ subnet: SUBNET });
  try {
    const sessionId = await stack.startSession("bench-recording");
    const client = await TerminalTestClient.connect(stack.wsUrl, { token: stack.token(sessionId, "controlplane"), cols: 120, rows: 40 });
    await client.waitFor((c) => c.messages.some((m) => m.type === "status" && m.state === "connected"), 20_000);
    await client.waitFor((c) => /[#$] $/.test(c.text()), LINE_TIMEOUT_MS, "first prompt");
    const started = Date.now();
    let typed = 0;
    const type = async (line: string, prompt: RegExp) => {
      const before = client.offset;
      for (const ch of line + "\r") {
        client.input(ch);
        typed++;
        if (flags["char-ms"] > 0) await new Promise((r) => setTimeout(r, flags["char-ms"]));
      }
      // The line's echo comes first; after Enter a newline, then the (coloured) prompt.
      await client.waitFor(
        (c) => {
          const after = c.bytes().subarray(before).toString("utf8");
          return after.includes("\n") && prompt.test(after);
        },
        LINE_TIMEOUT_MS,
        `prompt after ${line}`,
      );
    };
    for (const command of INSPECT) await type(command, /[#$] $/);
    for (const step of STEPS) {
      const script = (await fs.readFile(path.join(LAB_DIR, "steps", step, "solution.sh"), "utf8")).replace(/\n+$/, "").split("\n");
      await type("cat > /dev/null <<'EOF'", /> $/);
      for (const line of script) await type(line, /> $/);
      await type("EOF", /[#$] $/);
    }
    for (const command of INSPECT) await type(command, /[#$] $/);
    const seconds = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    await stack.recorder.flushAll();
    const received = client.bytes().length;
    const row = await stack.db.terminalRecording.findUniqueOrThrow({
      where: { sessionId_machine: { sessionId, machine: "controlplane" } },
    });
    const chunks = await stack.db.recordingChunk.findMany({ where: { recordingId: row.id }, orderBy: { offset: "asc" } });
    const raw = Buffer.concat(chunks.map((c) => Buffer.from(c.data)));
    const cast = castText((await loadCast(stack.db, sessionId, "controlplane", []))!);
    const gzRaw = gzipSync(raw, { level: 6 }).length;
    const gzCast = gzipSync(Buffer.from(cast), { level: 6 }).length;
    const perHour = 3600 / seconds;
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    console.log(`typed ${typed} keystrokes in ${seconds.toFixed(1)} s (${flags["char-ms"]} ms per key), ${chunks.length} chunk rows`);
    console.log(`browser received (baseline)     ${kib(received)}`);
    console.log(`recording raw bytes             ${kib(raw.length)}   gzip ${kib(gzRaw)} (${((gzRaw / raw.length) * 100).toFixed(0)} %)`);
    console.log(
      `asciicast v2 file               ${kib(cast.length)}   gzip ${kib(gzCast)} (${((gzCast / cast.length) * 100).toFixed(0)} %)`,
    );
    console.log(`per hour, one lab pass = 60 min: raw ${kib(raw.length)}/h, asciicast ${kib(cast.length)}/h, gzip ${kib(gzCast)}/h`);
    console.log(
      `per hour at this typing pace:    raw ${kib(raw.length * perHour)}/h, asciicast ${kib(cast.length * perHour)}/h, gzip ${kib(gzCast * perHour)}/h`,
    );
    await client.close();
  } finally {
    await stack.stop();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
