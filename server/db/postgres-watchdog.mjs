// Watchdog of the embedded PostgreSQL (see server/db/embedded.ts). Started detached, in its own
// session, by the process that started the postmaster, with a pipe on stdin from that process.
// When the pipe ends, that process is gone — stopped cleanly or killed, even by SIGKILL — and the
// watchdog sends the postmaster SIGINT (fast shutdown: sessions end, data is flushed), waits for
// it to exit, and exits itself. Plain Node, no TypeScript: it must start fast and depend on nothing.
//
//   node postgres-watchdog.mjs <postmaster pid> <postmaster start time, /proc/<pid>/stat field 22>
import fs from "node:fs";

const pid = Number(process.argv[2]);
const startTime = process.argv[3];
/** Fast shutdown normally takes well under a second; then SIGQUIT (immediate shutdown). */
const FAST_SHUTDOWN_MS = 60_000;
const POLL_MS = 200;

// Detached, it gets no terminal signals; these would only come from someone's broad kill.
for (const signal of ["SIGINT", "SIGHUP"]) process.on(signal, () => undefined);

/** The postmaster is still the process we were given (pid not reused) and not a zombie. */
function postmasterRuns() {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] !== "Z" && fields[19] === startTime;
  } catch {
    return false;
  }
}

async function stopPostmaster() {
  if (!postmasterRuns()) return;
  process.kill(pid, "SIGINT");
  const deadline = Date.now() + FAST_SHUTDOWN_MS;
  while (postmasterRuns()) {
    if (Date.now() > deadline) {
      process.kill(pid, "SIGQUIT");
      return;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

let gone = false;
function ownerGone() {
  if (gone) return;
  gone = true;
  stopPostmaster().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
process.stdin.on("data", () => undefined);
process.stdin.on("end", ownerGone);
process.stdin.on("close", ownerGone);
process.stdin.on("error", ownerGone);
