/** POST makes an invitation link bound to the cohort (the acceptor joins it with the role given); admins. */
import { z } from "zod";
import { requireRole } from "@/server/auth/guard";
import { createInvitation, invitationLinks } from "@/server/auth/invitations";
import { cohortRoute } from "@/server/compose/route";
import { CohortRuleError, getCohortOrThrow } from "@/server/cohorts/cohorts";
import { publicUrl } from "@/server/config";
import { jsonBody } from "@/server/http/route";

export const dynamic = "force-dynamic";

const Body = z.object({
  email: z.string(),
  role: z.enum(["learner", "instructor"]).default("learner"),
  days: z.coerce.number().optional(),
});

export const POST = cohortRoute<{ params: Promise<{ id: string }> }>(async (request, context, services) => {
  const admin = await requireRole(services.auth, request.headers, "admin");
  const { id } = await context.params;
  const cohort = await getCohortOrThrow(services.db, id);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const body = Body.parse(await jsonBody(request));
  const links = invitationLinks(services.secret, publicUrl(services.env));
  const { invitation, token } = await createInvitation(services.db, { ...body, cohortId: id }, admin.id, { secret: links.secret });
  return Response.json({ invitation, url: links.linkFor(token) }, { status: 201 });
});
