/**
 * Pre-provisioning (admins): POST starts a job that starts a session for every learner × lab of
 * the cohort (202 with the job; the work goes on in the background, resumed by another process
 * if this one stops); GET answers the newest job's
 * progress (n/total, failures with reasons), which the admin page polls.
 */
import { requireRole } from "@/server/auth/guard";
import { cohortRoute } from "@/server/compose/route";
import { getCohortOrThrow } from "@/server/cohorts/cohorts";
import { latestProvisionJob } from "@/server/cohorts/provision-jobs";
import { createProvisionJob } from "@/server/cohorts/provision";
import { log } from "@/server/log";

export const dynamic = "force-dynamic";

type Ctx = { params: Promise<{ id: string }> };

export const GET = cohortRoute<Ctx>(async (request, context, services) => {
  await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  await getCohortOrThrow(services.db, id);
  return Response.json({ job: await latestProvisionJob(services.db, id) });
});

export const POST = cohortRoute<Ctx>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  // The job is made here, not by services.provisioner: that object comes from server.ts's module
  // graph, whose CohortNotFoundError is another class than this route's, so its refusals would
  // miss cohortRoute's instanceof checks and answer 500.
  const job = await createProvisionJob(services.db, id, admin.id, services.provisioner.lease());
  const done = services.provisioner.run(job);
  done.catch((error: Error) => log.error({ cohortId: id, err: error.message }, "pre-provisioning job failed"));
  return Response.json({ job }, { status: 202 });
});
