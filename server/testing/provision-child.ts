/**
 * A server process that works on a pre-provisioning job and is killed -9 in the middle of it,
 * for server/cohorts/provision.int.test.ts: the real Provisioner over the static-hosts provider (netns
 * sshd hosts) and the real lab setup, on the database in DATABASE_URL. It starts a job for the
 * cohort and works on it until it is killed.
 *   DATABASE_URL=... tsx server/testing/provision-child.ts '{"cohortId":…,"hostsFile":…,"labsDir":…,"secretHex":…,"leaseMs":…,"renewMs":…}'
 */
import { z } from "zod";
import { Provisioner } from "../cohorts/provision";
import { createDb } from "../db/client";
import { LabCatalog } from "../labs/catalog";
import { log } from "../log";
import { SshExecPool } from "../ssh/exec";
import { dbHostClaims, staticHostsProvider } from "../machines/static-hosts";
import { providerRefsInUse } from "../sessions/lab-sessions";
import { configureMachineKeys } from "../machines/sealed-keys";

const Args = z.object({
  cohortId: z.string(),
  hostsFile: z.string(),
  labsDir: z.string(),
  secretHex: z.string(),
  leaseMs: z.number().int().positive(),
  renewMs: z.number().int().positive(),
});
const args = Args.parse(JSON.parse(process.argv[2] ?? "{}"));

// The test stack's secret: machine keys this process seals are opened by the test's process.
configureMachineKeys(Buffer.from(args.secretHex, "hex"));
const db = createDb(process.env.DATABASE_URL!);
const provider = staticHostsProvider({
  file: args.hostsFile,
  groupsInUse: () => providerRefsInUse(db, "static"),
  claims: dbHostClaims(db),
});
const provisioner = new Provisioner(
  { db, provider, labs: new LabCatalog(args.labsDir), pool: new SshExecPool(), log },
  { holder: `child:${process.pid}`, leaseMs: args.leaseMs, renewMs: args.renewMs },
);
const { job } = await provisioner.startJob(args.cohortId, null);
process.stdout.write(`job ${job.id}\n`);
setInterval(() => {}, 1_000);
