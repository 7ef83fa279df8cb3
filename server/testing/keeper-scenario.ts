/**
 * What the holder's keeper is for, on any machine reached over SSH (netns hosts and real VMs share
 * this): a shell with a variable set, the holder's daemon killed with SIGKILL (not its keeper), and
 * a new daemon, started by the keeper, giving back the same shell with the output it wrote meanwhile.
 */
import type { Client } from "ssh2";
import { connectHolder, HolderTerminal, type HolderLink } from "../holder/client";

export interface KeeperScenarioResult {
  /** From the SIGKILL to the same shell answering a command through the new daemon, ms. */
  msToSameShell: number;
  /** The shell's $$ before the kill (and after: the scenario checks it). */
  shellPid: string;
  before: { pid: number; instance: string };
  after: { pid: number; instance: string };
  /** Output the new daemon had for the terminal: the gap's line and the answer. */
  text: string;
  /** The process name of the shell's parent afterwards (the keeper, its subreaper: labdeck-keeper). */
  shellParent: string;
}

/** How long each step may take, ms: a loaded TCG guest answers in seconds. */
const STEP_TIMEOUT_MS = 60_000;
/** Pause between tries to reach the new daemon, ms. */
const POLL_MS = 50;

/** Runs `command` on its own exec channel; resolves with stdout when it ends. */
export function exec(ssh: Client, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    ssh.exec(command, (error, channel) => {
      if (error) return reject(error);
      let out = "";
      channel.on("data", (d: Buffer) => (out += d.toString()));
      channel.stderr.resume();
      channel.on("close", () => resolve(out));
    });
  });
}

/** A terminal's output as text, with a wait for a pattern in it. */
class Output {
  text = "";
  readonly term: HolderTerminal;
  constructor(id: string, from: number) {
    this.term = new HolderTerminal(id, { onOutput: (_, data) => (this.text += data.toString("utf8")) }, { from });
  }
  async waitFor(pattern: RegExp, what: string): Promise<RegExpExecArray> {
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const match = pattern.exec(this.text);
      if (match) return match;
      if (Date.now() > deadline) throw new Error(`waited for ${what}; got ${JSON.stringify(this.text.slice(-300))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/** A link to the holder whose instance is not `old` (a new daemon), polling while there is none. */
async function newDaemon(ssh: Client, old: string, socketPath?: string): Promise<HolderLink> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const link = await connectHolder(ssh, socketPath ? { socketPath } : {}).catch(() => null);
    if (link && link.hello!.instance !== old) return link;
    link?.close();
    if (Date.now() > deadline) throw new Error(`no new holder daemon within ${STEP_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Terminal `id` on the machine behind `ssh`: sets a variable, starts a job that writes a line 0.2 s
 * later, kills the daemon (kill -9 of HELLO's pid, from inside the machine), then reads the new
 * daemon's log of that terminal from its start and asks the shell for the variable and its $$.
 */
export async function killDaemonAndResume(ssh: Client, id: string, socketPath?: string): Promise<KeeperScenarioResult> {
  const link = await connectHolder(ssh, socketPath ? { socketPath } : {});
  const before = { pid: link.hello!.pid, instance: link.hello!.instance };
  const first = new Output(id, -1);
  await first.term.attach(link);
  first.term.write("K=kept-$((40+2)); echo shell-$$\r");
  const shellPid = (await first.waitFor(/shell-(\d+)\r\n/, "the shell's pid"))[1]!;
  first.term.write("(sleep 0.2; echo gap-$((6*7))) &\r");
  await first.waitFor(/\[1\] \d+/, "the job to start");
  const killed = performance.now();
  await exec(ssh, `kill -9 ${before.pid}`);
  const next = await newDaemon(ssh, before.instance, socketPath);
  const after = { pid: next.hello!.pid, instance: next.hello!.instance };
  const second = new Output(id, 0); // a new daemon's log starts at 0 (the connector's new epoch)
  const opened = await second.term.attach(next);
  if (opened.spawned) throw new Error("the new daemon started a fresh shell");
  second.term.write("echo again-$K-$$\r");
  await second.waitFor(new RegExp(`again-kept-42-${shellPid}\\r\\n`), "the same shell");
  const msToSameShell = performance.now() - killed;
  await second.waitFor(/gap-42\r\n/, "the line written during the gap");
  const shellParent = (await exec(ssh, `cat /proc/$(sed -n 's/^PPid:[[:space:]]*//p' /proc/${shellPid}/status)/comm`)).trim();
  second.term.kill();
  link.close();
  next.end();
  return { msToSameShell, shellPid, before, after, text: second.text, shellParent };
}
