import Link from "next/link";
import { notFound } from "next/navigation";
import { getFormatter, getTranslations } from "next-intl/server";
import { OpenInvitations } from "@/components/invitations/OpenInvitations";
import { invitationLinks, listInvitations } from "@/server/auth/invitations";
import { pageRole } from "@/server/compose/page";
import { cohortLiveSessions, cohortMembers, getCohortOrThrow, type CohortView } from "@/server/cohorts/cohorts";
import { CSV_MAX_BYTES } from "@/server/cohorts/csv-import";
import { publicUrl } from "@/server/config";
import { latestProvisionJob } from "@/server/cohorts/provision-jobs";
import { labsDirFromEnv, listLabs } from "@/server/labs/load";
import { getServicesOrThrow } from "@/server/compose/services";
import { CohortForm } from "../CohortForm";
import { AddMember, AssignInstructor, CsvImport, EndCohort, ExtendButton, Provision, RemoveMember } from "./CohortActions";

export const dynamic = "force-dynamic";

/** Minutes one press of "extend" adds to a learner's session. */
const EXTEND_STEP_MINUTES = 15;

/** Admin: one cohort — settings, members, invitations (link, CSV), instructors, pre-provisioning, sessions, end. */
export default async function CohortAdminPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  await pageRole(`/admin/cohorts/${id}`, "admin");
  const { db, secret, env } = getServicesOrThrow();
  const cohort: CohortView = await getCohortOrThrow(db, id).catch(() => notFound());
  const [{ members }, pending, job, live, { labs }] = await Promise.all([
    cohortMembers(db, id),
    listInvitations(db, invitationLinks(secret, publicUrl(env)), { cohortId: id, openOnly: true }),
    latestProvisionJob(db, id),
    cohortLiveSessions(db, id),
    listLabs(labsDirFromEnv()),
  ]);
  const t = await getTranslations("cohorts");
  const roles = await getTranslations("common.roles");
  const states = await getTranslations("capacity.state");
  const format = await getFormatter();
  const when = (d: Date | null) => (d ? format.dateTime(d, "dateTime") : "—");
  const ended = cohort.endedAt !== null;
  const names = new Map(members.map((m) => [m.userId, m.name]));
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-5xl px-6 py-8" data-testid="cohort-admin" data-cohort={id}>
        <div className="flex items-center gap-4">
          <Link href="/admin/cohorts" className="text-xs text-slate-500 hover:text-sky-700">
            ← {t("title")}
          </Link>
          <h1 className="text-2xl font-bold">{cohort.name}</h1>
          <span className="text-sm text-slate-600">{ended ? t("ended", { date: when(cohort.endedAt) }) : t("active")}</span>
          <Link href={`/cohorts/${id}`} className="ml-auto text-sm text-sky-700 hover:underline">
            {t("dashboard")} →
          </Link>
        </div>

        <h2 className="mt-8 text-lg font-semibold">{t("edit")}</h2>
        <CohortForm
          disabled={ended}
          catalog={labs.map((l) => ({ slug: l.slug, title: l.manifest.title }))}
          initial={{ ...cohort, startsAt: cohort.startsAt?.toISOString() ?? null, endsAt: cohort.endsAt?.toISOString() ?? null }}
        />

        <h2 className="mt-8 text-lg font-semibold">{t("members")}</h2>
        <Members cohortId={id} members={members} pending={pending} t={t} roles={roles} when={when} />

        <h2 className="mt-8 text-lg font-semibold">{t("invite")}</h2>
        <AddMember cohortId={id} disabled={ended} />
        <h2 className="mt-8 text-lg font-semibold">{t("import")}</h2>
        <CsvImport cohortId={id} maxKiB={CSV_MAX_BYTES / 1024} disabled={ended} />
        <h2 className="mt-8 text-lg font-semibold">{t("assign")}</h2>
        <AssignInstructor cohortId={id} disabled={ended} />
        <h2 className="mt-8 text-lg font-semibold">{t("provision")}</h2>
        <Provision cohortId={id} initial={job} disabled={ended} />

        <h2 className="mt-8 text-lg font-semibold">{t("sessions")}</h2>
        <LiveSessions live={live} names={names} t={t} states={states} when={when} />

        <h2 className="mt-8 text-lg font-semibold">{t("end")}</h2>
        <EndCohort cohortId={id} disabled={ended} />
      </div>
    </div>
  );
}

type Translator<Namespace extends string> = Awaited<ReturnType<typeof getTranslations<Namespace>>>;
type Member = Awaited<ReturnType<typeof cohortMembers>>["members"][number];

/** The members, each with a remove button, and the invitations not yet accepted. */
function Members(props: {
  cohortId: string;
  members: Member[];
  pending: Awaited<ReturnType<typeof listInvitations>>;
  t: Translator<"cohorts">;
  roles: Translator<"common.roles">;
  when(d: Date | null): string;
}) {
  const { cohortId, members, pending, t, roles, when } = props;
  return (
    <>
      {members.length === 0 ? (
        <p className="mt-2 text-sm text-slate-500">{t("noMembers")}</p>
      ) : (
        <table className="mt-2 w-full text-left text-sm" data-testid="members">
          <tbody>
            {members.map((m) => (
              <tr key={m.userId} className="border-t border-slate-200" data-email={m.email}>
                <td className="py-1">{m.name}</td>
                <td>{m.email}</td>
                <td>{roles(m.role)}</td>
                <td className="text-right">
                  <RemoveMember cohortId={cohortId} userId={m.userId} name={m.name} email={m.email} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pending.length > 0 && (
        <>
          <h3 className="mt-4 text-sm font-semibold">{t("pending")}</h3>
          <OpenInvitations
            testId="pending"
            rows={pending.map((p) => ({ id: p.id, email: p.email, roleLabel: roles(p.role), expires: when(p.expiresAt), url: p.url }))}
          />
        </>
      )}
    </>
  );
}

/** The cohort's live lab sessions: whose, which lab, their state and time limit, with "extend". */
function LiveSessions(props: {
  live: Awaited<ReturnType<typeof cohortLiveSessions>>;
  /** Member names by user id. */
  names: ReadonlyMap<string, string>;
  t: Translator<"cohorts">;
  states: Translator<"capacity.state">;
  when(d: Date | null): string;
}) {
  const { live, names, t, states, when } = props;
  if (live.length === 0) return <p className="mt-2 text-sm text-slate-500">{t("noSessions")}</p>;
  return (
    <table className="mt-2 w-full text-left text-sm" data-testid="live-cohort-sessions">
      <thead className="text-xs text-slate-500">
        <tr>
          <th className="py-1">{t("learners")}</th>
          <th>{t("lab")}</th>
          <th>{t("status")}</th>
          <th>{t("expires")}</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {live.map((s) => (
          <tr key={s.id} className="border-t border-slate-200" data-session={s.id}>
            <td className="py-1">{names.get(s.learnerId) ?? s.learnerId}</td>
            <td>{s.labSlug}</td>
            <td>{s.state === "ended" ? "" : states(s.state)}</td>
            <td>{s.expiresAt ? when(s.expiresAt) : t("noLimit")}</td>
            <td className="text-right">{s.expiresAt && <ExtendButton sessionId={s.id} minutes={EXTEND_STEP_MINUTES} />}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
