import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { createNetnsHosts, destroyNetnsHostsById, writeStaticHostsFile } from "./netns-hosts";

/**
 * Dev CLI for the netns sshd hosts (needs root):
 *   npx tsx server/testing/netns-hosts-cli.ts up --id dev --subnet 10 --dir .labdeck/dev-hosts --out .labdeck/hosts.json
 *   npx tsx server/testing/netns-hosts-cli.ts down --id dev --dir .labdeck/dev-hosts
 * `up` leaves the sshd processes running and exits; `down` removes them, the namespaces and links.
 * Exit codes: 0 ok, 1 the operation failed, 2 bad command line.
 */

/** Exit code for a bad command line. */
const EXIT_USAGE = 2;
/** Exit code for a failed operation. */
const EXIT_FAILURE = 1;
/** Hosts created when --names is not given. */
const DEFAULT_NAMES = "controlplane,node01,node02";

const USAGE = `usage:
  netns-hosts-cli.ts up   --id <[a-z0-9]{1,6}> --subnet <0..255> --dir <work dir> --out <hosts.json>
                          [--names ${DEFAULT_NAMES}] [--allocation shared|exclusive]
  netns-hosts-cli.ts down --id <[a-z0-9]{1,6}> [--dir <work dir>]`;

const Id = z.string().regex(/^[a-z0-9]{1,6}$/, "must be 1-6 characters a-z, 0-9");

const Up = z.object({
  command: z.literal("up"),
  id: Id,
  subnet: z.coerce.number().int().min(0).max(255),
  dir: z.string().min(1),
  out: z.string().min(1),
  names: z
    .string()
    .default(DEFAULT_NAMES)
    .transform((s) => s.split(",").map((n) => n.trim()))
    .pipe(
      z
        .array(
          z.string().regex(/^[a-z]([a-z0-9-]{0,29}[a-z0-9])?$/, "host names must be lowercase hostnames starting with a letter, ≤31 chars"),
        )
        .min(1),
    ),
  allocation: z.enum(["shared", "exclusive"]).default("shared"),
});

const Down = z.object({
  command: z.literal("down"),
  id: Id,
  dir: z.string().min(1).optional(),
});

const Command = z.discriminatedUnion("command", [Up.strict(), Down.strict()]);

function usageError(message: string): never {
  console.error(`error: ${message}\n${USAGE}`);
  process.exit(EXIT_USAGE);
}

function parseCommandLine(argv: string[]): z.infer<typeof Command> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        id: { type: "string" },
        subnet: { type: "string" },
        dir: { type: "string" },
        out: { type: "string" },
        names: { type: "string" },
        allocation: { type: "string" },
      },
    });
  } catch (err) {
    usageError((err as Error).message);
  }
  if (parsed.positionals.length !== 1) usageError("expected exactly one command: up or down");
  // Only pass flags that were given, so `.strict()` reports flags the command does not take.
  const given = Object.fromEntries(Object.entries(parsed.values).filter(([, v]) => v !== undefined));
  const result = Command.safeParse({ command: parsed.positionals[0], ...given });
  if (!result.success) {
    const lines = result.error.issues.map((i) => {
      if (i.code === "unrecognized_keys") return `${i.keys.map((k) => `--${k}`).join(", ")}: not a flag of ${parsed.positionals[0]}`;
      if (i.code === "invalid_type" && i.input === undefined) return `--${i.path.join(".")}: required`;
      const where = i.path.length > 0 ? (i.path[0] === "command" ? "command" : `--${i.path.join(".")}`) : "flags";
      return `${where}: ${i.message}`;
    });
    usageError(lines.join("\n       "));
  }
  return result.data;
}

async function main(): Promise<void> {
  const cmd = parseCommandLine(process.argv.slice(2));
  if (cmd.command === "up") {
    const set = await createNetnsHosts({ id: cmd.id, names: cmd.names, subnet: cmd.subnet, dir: cmd.dir });
    const out = path.resolve(cmd.out);
    await writeStaticHostsFile(set, out, cmd.allocation);
    console.log(out);
    for (const h of set.hosts) {
      console.log(`  ${h.name.padEnd(16)} ${h.user}@${h.host}:${h.port}  netns ${h.namespace}  sshd pid ${h.pid}`);
    }
    console.log(`  key ${set.hosts[0]!.privateKeyPath}`);
    console.log(`stop with: npx tsx server/testing/netns-hosts-cli.ts down --id ${set.id} --dir ${cmd.dir}`);
  } else {
    await destroyNetnsHostsById(cmd.id, { dir: cmd.dir });
    console.log(`removed netns hosts ${cmd.id}`);
  }
}

main().catch((err: unknown) => {
  console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(EXIT_FAILURE);
});
