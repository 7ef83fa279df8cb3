/**
 * Static hosts: machines an admin already has, listed in a JSON file. Hosts are grouped; a
 * session gets one group holding every machine name its lab needs. With `allocation: "shared"`
 * every session gets the first fitting group (a demo or a single-learner setup); with
 * "exclusive" a group serves one live session at a time.
 *
 * {"allocation":"exclusive","groups":[{"id":"a","reset":"rm -rf /root/* /tmp/*","machines":[{"name":"controlplane","host":"10.0.0.5",
 *   "port":22,"user":"root","privateKeyPath":"/etc/labdeck/id_ed25519","hostKey":"ssh-ed25519 AAAA..."}]}]}
 *
 * Reset (exclusive only): a group's optional `reset` is a bash script run on EACH machine of the
 * group over SSH (as its user, in the checks' clean environment: `scriptCommand`, killed after
 * `resetTimeoutSeconds`) when a session releases the group and before anyone gets it again. The
 * group stays claimed (held out) until every machine's reset exits 0; a failed try is retried
 * with backoff (RESET_BACKOFF_*), logged and counted (labdeck_host_group_resets_total). A reset
 * runs on the machines, not the server: it is what puts that machine back (files, users,
 * services), and the admin who owns the hosts writes it.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { Db } from "../db/client";
import { prepareHolder } from "../holder/install";
import { hostKeyBlob } from "../ssh/connect";
import type { Logger } from "pino";
import { log as defaultLog } from "../log";
import { metrics } from "../ops/metrics";
import { NoCapacityError, type MachineProvider, type MachineRequest, type ProvisionedMachine } from "./provider";
import { SshExecPool } from "../ssh/exec";

/** Longest reset script a hosts file may hold, in characters (it is sent over SSH on each try). */
const RESET_SCRIPT_MAX_CHARS = 64 * 1024;
/** Wait before retrying a failed reset, in ms: doubled per failure up to the cap. */
export const RESET_BACKOFF_MIN_MS = 2_000;
export const RESET_BACKOFF_MAX_MS = 5 * 60_000;
/** How often due resets are looked for (after a restart, after backoff), in ms. */
const RESET_TICK_MS = 5_000;
/** Reset output kept on the claim row for operators, in characters. */
const RESET_ERROR_MAX_CHARS = 2_000;

const HostKey = z.string().refine((s) => {
  try {
    hostKeyBlob(s);
    return true;
  } catch {
    return false;
  }
}, "must be an OpenSSH public key line such as 'ssh-ed25519 AAAA...'");

export const StaticHostsFile = z.strictObject({
  /**
   * True for hosts that are sshd processes in network namespaces of the server's own machine
   * (netns-hosts.ts writes it): they share its filesystem and processes, so a learner there is
   * root on the server. Served only with LABDECK_MACHINES=netns-demo (select.ts).
   */
  demo: z.boolean().default(false),
  allocation: z.enum(["shared", "exclusive"]).default("exclusive"),
  groups: z
    .array(
      z.strictObject({
        id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
        /** Bash script run on each machine after a session and before the next (exclusive allocation). */
        reset: z.string().min(1).max(RESET_SCRIPT_MAX_CHARS).optional(),
        /** Each machine's reset is killed after this many seconds (a failed try). */
        resetTimeoutSeconds: z.number().int().min(1).max(3600).default(120),
        machines: z
          .array(
            z.strictObject({
              name: z.string().regex(/^[a-z][a-z0-9-]{0,30}$/),
              host: z.string().min(1),
              port: z.number().int().min(1).max(65535).default(22),
              user: z.string().min(1),
              privateKeyPath: z.string().min(1),
              hostKey: HostKey,
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});
export type StaticHostsFile = z.infer<typeof StaticHostsFile>;

/** Reads and validates a hosts file; errors name the file and the field. */
export async function loadStaticHosts(file: string): Promise<StaticHostsFile> {
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = StaticHostsFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${file}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  for (const group of parsed.data.groups) {
    const names = group.machines.map((m) => m.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) throw new Error(`${file}: group ${group.id}: machine "${dup}" is listed twice`);
    if (group.reset && parsed.data.allocation !== "exclusive") {
      throw new Error(
        `${file}: group ${group.id}: "reset" needs "allocation": "exclusive" (a shared group is in use by several sessions at once)`,
      );
    }
  }
  return parsed.data;
}

export interface StaticHostsOptions {
  file: string;
  /** Groups (providerRef values) held by live sessions; consulted for exclusive allocation. */
  groupsInUse: () => Promise<Set<string>>;
  /**
   * Exclusive allocation's atomic step: true when `groupId` is now the session's (nobody held
   * it), false when another start took it first. `release` frees a session's groups, except
   * those in `resetting`, which stay held out awaiting their reset.
   */
  claims: HostClaims;
  /** Install or upgrade the terminal holder on a machine when a session gets it (default true). */
  installHolder?: boolean;
  /** Where resets are logged (default: the server's logger). */
  log?: Logger;
}

export interface HostClaims {
  claim(groupId: string, sessionId: string): Promise<boolean>;
  release(sessionId: string, resetting?: ReadonlySet<string>): Promise<void>;
  /** Groups whose reset is due at `now`. */
  dueResets?(now: Date): Promise<{ groupId: string; attempts: number }[]>;
  /** Takes a due reset until `leaseUntil` (one process runs it); false when another took it. */
  takeReset?(groupId: string, now: Date, leaseUntil: Date): Promise<boolean>;
  /** The reset succeeded: the group is free. */
  resetDone?(groupId: string): Promise<void>;
  /** The reset failed: held out until `retryAt`. */
  resetFailed?(groupId: string, retryAt: Date, error: string): Promise<void>;
}

/** Host group claims in the database (HostGroupClaim's primary key decides a race). */
export function dbHostClaims(db: Db): StaticHostsOptions["claims"] {
  return {
    async claim(groupId, sessionId) {
      const made = await db.hostGroupClaim.createMany({ data: [{ groupId, sessionId }], skipDuplicates: true });
      return made.count === 1;
    },
    async release(sessionId, resetting = new Set()) {
      const held = [...resetting];
      // Idempotent: a group already awaiting its reset keeps its schedule.
      await db.hostGroupClaim.updateMany({
        where: { sessionId, groupId: { in: held }, resetDueAt: null },
        data: { resetDueAt: new Date(), resetAttempts: 0 },
      });
      await db.hostGroupClaim.deleteMany({ where: { sessionId, groupId: { notIn: held }, resetDueAt: null } });
    },
    async dueResets(now) {
      const rows = await db.hostGroupClaim.findMany({
        where: { resetDueAt: { lte: now } },
        select: { groupId: true, resetAttempts: true },
      });
      return rows.map((r) => ({ groupId: r.groupId, attempts: r.resetAttempts }));
    },
    async takeReset(groupId, now, leaseUntil) {
      const taken = await db.hostGroupClaim.updateMany({ where: { groupId, resetDueAt: { lte: now } }, data: { resetDueAt: leaseUntil } });
      return taken.count === 1;
    },
    async resetDone(groupId) {
      await db.hostGroupClaim.deleteMany({ where: { groupId, resetDueAt: { not: null } } });
    },
    async resetFailed(groupId, retryAt, error) {
      await db.hostGroupClaim.updateMany({
        where: { groupId, resetDueAt: { not: null } },
        data: { resetDueAt: retryAt, resetAttempts: { increment: 1 }, resetError: error.slice(0, RESET_ERROR_MAX_CHARS) },
      });
    },
  };
}

/**
 * A static-hosts provider, plus its reset loop (started by select.ts; tests run resets directly).
 * Methods are arrow properties: callers may pass them on detached.
 */
export class StaticHostsProvider implements MachineProvider {
  readonly name = "static";
  private readonly log: Logger;
  /** SSH exec connections for resets, made on the first one. */
  private pool: SshExecPool | null = null;
  private tick: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(private readonly options: StaticHostsOptions) {
    this.log = options.log ?? defaultLog;
  }

  /** Runs every due reset now; resolves when they finished (each succeeded or was rescheduled). */
  readonly runResets = (): Promise<void> => {
    const { claims } = this.options;
    if (!claims.dueResets) return Promise.resolve();
    if (this.running) {
      this.again = true; // a release during a run: look again right after it
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const due = await claims.dueResets!(new Date());
        await Promise.all(
          due.map((d) =>
            this.resetGroup(d.groupId, d.attempts).catch((error: Error) =>
              this.log.warn({ group: d.groupId, err: error.message }, "host group reset could not run"),
            ),
          ),
        );
      } while (this.again);
    })()
      .catch((error: Error) => this.log.warn({ err: error.message }, "host group resets not looked up"))
      .finally(() => (this.running = null));
    return this.running;
  };

  /** Looks for due resets every RESET_TICK_MS until stop() (picks up what a stopped process left). */
  readonly startResets = (): void => {
    if (this.tick) return;
    this.tick = setInterval(() => void this.runResets(), RESET_TICK_MS);
    this.tick.unref();
    void this.runResets();
  };

  readonly stop = (): void => {
    if (this.tick) clearInterval(this.tick);
    this.tick = null;
    this.pool?.closeAll();
    this.pool = null;
  };

  readonly create = async (request: MachineRequest): Promise<ProvisionedMachine[]> => {
    const { options } = this;
    const hosts = await loadStaticHosts(options.file);
    const exclusive = hosts.allocation === "exclusive";
    const group = await this.chooseGroup(hosts, exclusive, request);
    const machines = await Promise.all(
      request.machines.map(async (name) => {
        const m = group.machines.find((x) => x.name === name)!;
        const keyPath = path.resolve(path.dirname(options.file), m.privateKeyPath);
        const privateKey = await fs.readFile(keyPath, "utf8").catch((error: Error) => {
          throw new Error(`${options.file}: group ${group.id}: ${name}: cannot read private key: ${error.message}`);
        });
        return { name, host: m.host, port: m.port, user: m.user, privateKey, hostKey: m.hostKey, providerRef: group.id };
      }),
    ).catch(async (error: unknown) => {
      // Nothing was handed out: the group is free again.
      if (exclusive) await options.claims.release(request.sessionId);
      throw error;
    });
    // First use of a machine: install (or upgrade) the terminal holder, in the background so
    // the session starts as fast as before; a machine without it keeps the direct PTY.
    if (options.installHolder ?? true) for (const m of machines) void prepareHolder(m);
    return machines;
  };

  readonly destroy = async (sessionId: string, _machines?: readonly ProvisionedMachine[]): Promise<void> => {
    // Static machines belong to the admin; releasing the session frees the group, or, for a
    // group with a reset, holds it out until its reset (started now) succeeds.
    const hosts = await loadStaticHosts(this.options.file);
    const resetting = new Set(hosts.allocation === "exclusive" ? hosts.groups.filter((g) => g.reset).map((g) => g.id) : []);
    await this.options.claims.release(sessionId, resetting);
    if (resetting.size > 0) void this.runResets();
  };

  /** The first group holding every machine the request names (exclusive: free and now claimed); NoCapacityError when none. */
  private async chooseGroup(
    hosts: StaticHostsFile,
    exclusive: boolean,
    request: MachineRequest,
  ): Promise<StaticHostsFile["groups"][number]> {
    const busy = exclusive ? await this.options.groupsInUse() : new Set<string>();
    const candidates = hosts.groups.filter(
      (g) => !busy.has(g.id) && request.machines.every((name) => g.machines.some((m) => m.name === name)),
    );
    for (const g of exclusive ? candidates : candidates.slice(0, 1)) {
      if (!exclusive || (await this.options.claims.claim(g.id, request.sessionId))) return g;
    }
    throw new NoCapacityError(
      { key: "noCapacityHosts", params: { machines: request.machines.join(", ") } },
      `no free host group has ${request.machines.join(", ")}`,
    );
  }

  /** One reset try of one group: every machine's script must exit 0. */
  private async resetGroup(groupId: string, attempts: number): Promise<void> {
    const { claims } = this.options;
    const hosts = await loadStaticHosts(this.options.file);
    const group = hosts.groups.find((g) => g.id === groupId);
    const now = new Date();
    // The lease covers the whole try: connecting and the script's timeout, with room to write back.
    const leaseUntil = new Date(now.getTime() + ((group?.resetTimeoutSeconds ?? 0) + 60) * 1000);
    if (!(await claims.takeReset!(groupId, now, leaseUntil))) return;
    if (!group?.reset) {
      // The hosts file no longer asks for a reset (or lists the group): nothing holds it out.
      await claims.resetDone!(groupId);
      return;
    }
    const started = Date.now();
    const failed = await this.resetFailures(group);
    if (failed.length === 0) {
      await claims.resetDone!(groupId);
      metrics().hostGroupResets.inc({ outcome: "ok" });
      this.log.info({ group: groupId, ms: Date.now() - started, attempts: attempts + 1 }, "host group reset; free again");
      return;
    }
    const waitMs = Math.min(RESET_BACKOFF_MAX_MS, RESET_BACKOFF_MIN_MS * 2 ** attempts);
    await claims.resetFailed!(groupId, new Date(Date.now() + waitMs), failed.join("\n"));
    metrics().hostGroupResets.inc({ outcome: "failed" });
    this.log.warn(
      { group: groupId, attempts: attempts + 1, retryInMs: waitMs, output: failed.join("\n").slice(0, 500) },
      "host group reset failed; group held out until a reset succeeds",
    );
  }

  /** Runs the group's reset script on each of its machines; what failed, one line per machine (empty: all passed). */
  private async resetFailures(group: StaticHostsFile["groups"][number]): Promise<string[]> {
    const endpoints = await Promise.all(
      group.machines.map(async (m) => ({
        ...m,
        privateKey: await fs.readFile(path.resolve(path.dirname(this.options.file), m.privateKeyPath), "utf8"),
      })),
    ).catch((error: Error) => error);
    if (endpoints instanceof Error) return [`cannot read a private key: ${endpoints.message}`];
    const results = await Promise.all(
      endpoints.map((e) => (this.pool ??= new SshExecPool()).run(e, group.reset!, group.resetTimeoutSeconds)),
    );
    return results.flatMap((r, i) =>
      r.outcome === "pass" ? [] : [`${group.machines[i]!.name}: ${r.outcome} (exit ${r.exitCode}) ${r.output}`.trim()],
    );
  }
}

export function staticHostsProvider(options: StaticHostsOptions): StaticHostsProvider {
  return new StaticHostsProvider(options);
}
