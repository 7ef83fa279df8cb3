/**
 * Static hosts: machines an admin already has, listed in a JSON file. Hosts are grouped; a
 * session gets one group holding every machine name its lab needs. With `allocation: "shared"`
 * every session gets the first fitting group (a demo or a single-learner setup); with
 * "exclusive" a group serves one live session at a time.
 *
 * {"allocation":"exclusive","groups":[{"id":"a","machines":[{"name":"controlplane","host":"10.0.0.5",
 *   "port":22,"user":"root","privateKeyPath":"/etc/labdeck/id_ed25519","hostKey":"ssh-ed25519 AAAA..."}]}]}
 */
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { Db } from "../db/client";
import { prepareHolder } from "../terminal/holder/install";
import { hostKeyBlob } from "../terminal/ssh";
import { NoCapacityError, type MachineProvider, type MachineRequest, type ProvisionedMachine } from "./provider";

const HostKey = z
  .string()
  .refine((s) => {
    try {
      hostKeyBlob(s);
      return true;
    } catch {
      return false;
    }
  }, "must be an OpenSSH public key line such as 'ssh-ed25519 AAAA...'");

export const StaticHostsFile = z.strictObject({
  allocation: z.enum(["shared", "exclusive"]).default("exclusive"),
  groups: z
    .array(
      z.strictObject({
        id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
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
    throw new Error(`${file}: ${(error as Error).message}`);
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
  }
  return parsed.data;
}

export interface StaticHostsOptions {
  file: string;
  /** Groups (providerRef values) held by live sessions; consulted for exclusive allocation. */
  groupsInUse: () => Promise<Set<string>>;
  /**
   * Exclusive allocation's atomic step: true when `groupId` is now the session's (nobody held
   * it), false when another start took it first. `release` frees a session's groups.
   */
  claims: { claim(groupId: string, sessionId: string): Promise<boolean>; release(sessionId: string): Promise<void> };
  /** Install or upgrade the terminal holder on a machine when a session gets it (default true). */
  installHolder?: boolean;
}

/** Host group claims in the database (HostGroupClaim's primary key decides a race). */
export function dbHostClaims(db: Db): StaticHostsOptions["claims"] {
  return {
    async claim(groupId, sessionId) {
      const made = await db.hostGroupClaim.createMany({ data: [{ groupId, sessionId }], skipDuplicates: true });
      return made.count === 1;
    },
    async release(sessionId) {
      await db.hostGroupClaim.deleteMany({ where: { sessionId } });
    },
  };
}

export function staticHostsProvider(options: StaticHostsOptions): MachineProvider {
  return {
    name: "static",
    async create(request: MachineRequest): Promise<ProvisionedMachine[]> {
      const hosts = await loadStaticHosts(options.file);
      const exclusive = hosts.allocation === "exclusive";
      const busy = exclusive ? await options.groupsInUse() : new Set<string>();
      const candidates = hosts.groups.filter(
        (g) => !busy.has(g.id) && request.machines.every((name) => g.machines.some((m) => m.name === name)),
      );
      let group: (typeof candidates)[number] | undefined;
      for (const g of exclusive ? candidates : candidates.slice(0, 1)) {
        if (!exclusive || (await options.claims.claim(g.id, request.sessionId))) {
          group = g;
          break;
        }
      }
      if (!group) {
        throw new NoCapacityError(`空いているマシンがありません（${request.machines.join(", ")} を揃えられるホスト群がありません）`);
      }
      const chosen = group;
      const machines = await Promise.all(
        request.machines.map(async (name) => {
          const m = chosen.machines.find((x) => x.name === name)!;
          const keyPath = path.resolve(path.dirname(options.file), m.privateKeyPath);
          const privateKey = await fs.readFile(keyPath, "utf8").catch((error: Error) => {
            throw new Error(`${options.file}: group ${chosen.id}: ${name}: cannot read private key: ${error.message}`);
          });
          return { name, host: m.host, port: m.port, user: m.user, privateKey, hostKey: m.hostKey, providerRef: chosen.id };
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
    },
    async destroy(sessionId) {
      // Static machines belong to the admin; releasing the session frees the group.
      await options.claims.release(sessionId);
    },
  };
}
