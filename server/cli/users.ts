/**
 * `labdeck users invite --email E --role R [--days N]`: an invitation link from the command line,
 * for operators (e.g. a new admin when the only admin's password is lost). Works on the running
 * server's database (DATABASE_URL, or the embedded PostgreSQL of LABDECK_DATA_DIR); starts the
 * embedded one for the moment when the server is not running.
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { parseEnv, publicUrl } from "../config";
import { openTools } from "../compose/tools";
import { loadSecret } from "../secret";
import { ROLES } from "../auth/auth";
import { createInvitation } from "../auth/invitations";
import { Email } from "../auth/users";
import { zonedConsoleTime } from "../i18n/time-zone";

const Options = z.object({
  email: Email,
  role: z.enum(ROLES),
  days: z.coerce.number().int().min(1).max(90).optional(),
});

export class UsersUsageError extends Error {}

export async function runUsersCli(argv: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { email: { type: "string" }, role: { type: "string" }, days: { type: "string" } },
    });
  } catch (error) {
    throw new UsersUsageError((error as Error).message);
  }
  if (values.positionals.join(" ") !== "users invite") throw new UsersUsageError(`unknown command: ${values.positionals.join(" ")}`);
  const options = Options.safeParse(values.values);
  if (!options.success) throw new UsersUsageError(options.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n"));

  const env = parseEnv();
  const tools = await openTools(env);
  const { db } = tools;
  try {
    // The server's secret seals the token, so the link is listed on /admin/invitations too.
    const secret = await loadSecret(env.LABDECK_DATA_DIR, env.LABDECK_SECRET);
    const { invitation, token } = await createInvitation(db, options.data, null, { secret });
    process.stdout.write(
      `invitation for ${invitation.email} (${invitation.role}), valid until ${zonedConsoleTime(invitation.expiresAt, env.LABDECK_TIME_ZONE)}:\n` +
        `${publicUrl(env)}/invite/${token}\n`,
    );
    return 0;
  } finally {
    await tools.close();
  }
}
