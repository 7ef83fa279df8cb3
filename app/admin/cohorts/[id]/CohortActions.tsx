"use client";
/**
 * The admin's actions on one cohort, each a small form over its API: add a member by email (or
 * invite them by link), remove a member, import a CSV (with the per-line report), assign an
 * instructor, pre-provision (polled progress), extend a learner's time, end the cohort.
 */
import { useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { useCallback, useEffect, useState } from "react";
import { callApi } from "@/components/cohorts/api";
import { LinkWithCopy } from "@/components/invitations/OpenInvitations";
import type { CsvImportReport } from "@/server/cohorts/csv-import";
import type { AddByEmailResult } from "@/server/cohorts/members";
import type { ProvisionJobView } from "@/server/cohorts/provision-jobs";
import { ConfirmDeleteButton } from "@/components/ConfirmDeleteButton";

/** How often the page asks for a running pre-provisioning job's progress, in ms. */
const PROVISION_POLL_MS = 1_000;

const box = "mt-3 rounded-lg border border-slate-200 bg-white p-4";
const input = "mt-1 block rounded border border-slate-300 px-2 py-1.5";
const button = "rounded bg-sky-600 px-4 py-2 text-sm font-semibold text-white hover:bg-sky-700 disabled:opacity-60";

function Alert({ text }: { text: string | null }) {
  return text ? (
    <p role="alert" className="mt-2 text-sm text-red-700">
      {text}
    </p>
  ) : null;
}

/** Adds someone by email: an existing account becomes a member at once, anyone else gets an invitation link. The form clears after sending. */
export function AddMember({ cohortId, disabled }: { cohortId: string; disabled: boolean }) {
  const t = useTranslations("cohorts");
  const roles = useTranslations("common.roles");
  const router = useRouter();
  const [result, setResult] = useState<AddByEmailResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <div className={box}>
      <p className="text-xs text-slate-600">{t("addHint")}</p>
      <form
        className="mt-2 flex flex-wrap items-end gap-3"
        data-testid="invite-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const element = e.currentTarget;
          const form = new FormData(element);
          setError(null);
          setResult(null);
          const res = await callApi<AddByEmailResult>(`/api/cohorts/${cohortId}/members`, {
            method: "POST",
            json: { email: form.get("email"), role: form.get("role") },
          });
          if (res.ok && res.body) {
            setResult(res.body);
            element.reset();
            router.refresh();
          } else setError(res.error ?? t("failed"));
        }}
      >
        <label className="text-sm">
          {t("email")}
          <input name="email" type="email" required className={`${input} w-64`} />
        </label>
        <label className="text-sm">
          {t("role")}
          <select name="role" defaultValue="learner" className={input}>
            <option value="learner">{roles("learner")}</option>
            <option value="instructor">{roles("instructor")}</option>
          </select>
        </label>
        <button type="submit" className={button} disabled={disabled}>
          {t("addRun")}
        </button>
      </form>
      {result && (
        <p className="mt-3 text-sm" role="status" data-testid="add-result" data-outcome={result.outcome}>
          {result.outcome === "invited" ? (
            <>
              {t("inviteCreated", { email: result.invitation.email })}{" "}
              {result.invitation.url && <LinkWithCopy url={result.invitation.url} testId="cohort-invitation-url" />}
            </>
          ) : (
            t(result.outcome === "added" ? "memberAdded" : "memberAlready", { email: result.member.email })
          )}
        </p>
      )}
      <Alert text={error} />
    </div>
  );
}

/** Removes a member (learner or instructor) after a confirmation. */
export function RemoveMember({ cohortId, userId, name, email }: { cohortId: string; userId: string; name: string; email: string }) {
  const t = useTranslations("cohorts");
  return (
    <ConfirmDeleteButton
      url={`/api/cohorts/${cohortId}/members/${encodeURIComponent(userId)}`}
      confirmText={t("removeConfirm", { name, email })}
      label={t("removeRun")}
      failedText={t("failed")}
    />
  );
}

export function CsvImport({ cohortId, maxKiB, disabled }: { cohortId: string; maxKiB: number; disabled: boolean }) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [report, setReport] = useState<CsvImportReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <div className={box}>
      <p className="text-xs text-slate-600">{t("importHint", { kb: maxKiB })}</p>
      <form
        className="mt-2 flex flex-wrap items-end gap-3"
        data-testid="csv-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const file = (new FormData(e.currentTarget).get("file") as File | null) ?? null;
          if (!file) return;
          setBusy(true);
          setError(null);
          setReport(null);
          const res = await callApi<CsvImportReport>(`/api/cohorts/${cohortId}/import`, {
            method: "POST",
            headers: { "content-type": "text/csv" },
            body: file,
          });
          setBusy(false);
          if (res.ok && res.body) {
            setReport(res.body);
            router.refresh();
          } else setError(res.error ?? t("failed"));
        }}
      >
        <input name="file" type="file" accept=".csv,text/csv" required className="text-sm" />
        <button type="submit" className={button} disabled={busy || disabled}>
          {busy ? t("importing") : t("importRun")}
        </button>
      </form>
      <Alert text={error} />
      {report && (
        <div className="mt-3 text-sm" data-testid="csv-report">
          <p>
            <span className="font-semibold text-emerald-700" data-testid="csv-invited" data-count={report.invited.length}>
              {t("importInvited", { n: report.invited.length })}
            </span>
            <span className="ml-3 font-semibold text-emerald-700" data-testid="csv-added" data-count={report.added.length}>
              {t("importAdded", { n: report.added.length })}
            </span>
            {report.alreadyMembers.length > 0 && (
              <span className="ml-3 text-slate-600" data-testid="csv-already" data-count={report.alreadyMembers.length}>
                {t("importAlready", { n: report.alreadyMembers.length })}
              </span>
            )}
            {report.problems.length > 0 && (
              <span className="ml-3 font-semibold text-red-700">{t("importProblems", { n: report.problems.length })}</span>
            )}
          </p>
          {report.invited.length > 0 && (
            <ul className="mt-2 space-y-1">
              {report.invited.map((r) => (
                <li key={r.email} className="text-xs">
                  {r.email} ({r.name}) — <LinkWithCopy url={r.url} />
                </li>
              ))}
            </ul>
          )}
          {report.added.length > 0 && (
            <ul className="mt-2 space-y-1" data-testid="csv-added-rows">
              {report.added.map((r) => (
                <li key={r.email} className="text-xs" data-email={r.email}>
                  {t("importAddedRow", { line: r.line, email: r.email })}
                </li>
              ))}
            </ul>
          )}
          {report.problems.length > 0 && (
            <table className="mt-2 w-full text-left text-xs" data-testid="csv-problems">
              <thead className="text-slate-500">
                <tr>
                  <th className="py-1">{t("line")}</th>
                  <th>{t("problem")}</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {report.problems.map((p, i) => (
                  <tr key={i} className="border-t border-slate-200" data-line={p.line} data-code={p.code}>
                    <td className="py-1">{p.line === 0 ? t("fileLevel") : p.line}</td>
                    <td>{t(`problems.${p.code}`)}</td>
                    <td className="text-slate-500">{p.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </div>
  );
}

export function AssignInstructor({ cohortId, disabled }: { cohortId: string; disabled: boolean }) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  return (
    <div className={box}>
      <form
        className="flex flex-wrap items-end gap-3"
        data-testid="assign-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const form = e.currentTarget;
          setError(null);
          const res = await callApi(`/api/cohorts/${cohortId}/members`, {
            method: "POST",
            json: { email: new FormData(form).get("email"), role: "instructor" },
          });
          if (res.ok) {
            form.reset();
            router.refresh();
          } else setError(res.error ?? t("failed"));
        }}
      >
        <label className="text-sm">
          {t("assignHint")}
          <input name="email" type="email" required className={`${input} w-64`} />
        </label>
        <button type="submit" className={button} disabled={disabled}>
          {t("assignRun")}
        </button>
      </form>
      <Alert text={error} />
    </div>
  );
}

export function Provision({ cohortId, initial, disabled }: { cohortId: string; initial: ProvisionJobView | null; disabled: boolean }) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [job, setJob] = useState<ProvisionJobView | null>(initial);
  const [error, setError] = useState<string | null>(null);
  const poll = useCallback(async () => {
    const res = await callApi<{ job: ProvisionJobView | null }>(`/api/cohorts/${cohortId}/provision`);
    if (res.ok && res.body) setJob(res.body.job);
  }, [cohortId]);
  const running = job?.state === "running";
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => void poll(), PROVISION_POLL_MS);
    return () => clearInterval(timer);
  }, [running, poll]);
  useEffect(() => {
    if (job && !running) router.refresh();
  }, [job, running, router]);
  return (
    <div className={box} data-testid="provision">
      <p className="text-xs text-slate-600">{t("provisionHint")}</p>
      <button
        type="button"
        className={`${button} mt-2`}
        disabled={running || disabled}
        onClick={async () => {
          setError(null);
          const res = await callApi<{ job: ProvisionJobView }>(`/api/cohorts/${cohortId}/provision`, { method: "POST" });
          if (res.ok && res.body) setJob(res.body.job);
          else setError(res.error ?? t("failed"));
        }}
      >
        {t("provisionRun")}
      </button>
      <Alert text={error} />
      {job ? (
        <div className="mt-3 text-sm" data-testid="provision-job" data-state={job.state}>
          <div className="flex items-center gap-3">
            <span className="font-semibold">{t(`provisionState.${job.state}`)}</span>
            <span data-testid="provision-progress">{t("provisionProgress", { done: job.succeeded, total: job.total })}</span>
            {job.failed > 0 && <span className="text-red-700">{t("provisionFailed", { n: job.failed })}</span>}
          </div>
          <div
            className="mt-2 h-2 w-full overflow-hidden rounded bg-slate-200"
            role="progressbar"
            aria-valuemin={0}
            aria-valuemax={job.total}
            aria-valuenow={job.succeeded + job.failed}
          >
            <div className="h-full bg-emerald-500" style={{ width: `${job.total ? (100 * job.succeeded) / job.total : 100}%` }} />
          </div>
          {job.failures.length > 0 && (
            <ul className="mt-2 space-y-1 text-xs text-red-800">
              {job.failures.map((f, i) => (
                <li key={i}>
                  {f.email} × {f.labSlug}: {f.code === "noCapacity" ? t("noCapacity") : ""} {f.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      ) : (
        <p className="mt-2 text-xs text-slate-500">{t("provisionNone")}</p>
      )}
    </div>
  );
}

export function ExtendButton({ sessionId, minutes }: { sessionId: string; minutes: number }) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [state, setState] = useState<{ ok: boolean; text: string } | null>(null);
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        className="rounded border border-sky-600 px-2 py-0.5 text-xs text-sky-700 hover:bg-sky-50"
        onClick={async () => {
          const res = await callApi(`/api/sessions/${sessionId}/extend`, { method: "POST", json: { minutes } });
          setState(res.ok ? { ok: true, text: t("extendDone") } : { ok: false, text: res.error ?? t("failed") });
          if (res.ok) router.refresh();
        }}
      >
        {t("extend", { n: minutes })}
      </button>
      {state && <span className={`text-xs ${state.ok ? "text-emerald-700" : "text-red-700"}`}>{state.text}</span>}
    </span>
  );
}

export function EndCohort({ cohortId, disabled }: { cohortId: string; disabled: boolean }) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <div className="mt-3 rounded-lg border border-red-200 bg-red-50 p-4">
      <p className="text-xs text-red-900">{t("endHint")}</p>
      <button
        type="button"
        disabled={disabled}
        className="mt-2 rounded bg-red-700 px-4 py-2 text-sm font-semibold text-white hover:bg-red-800 disabled:opacity-60"
        onClick={async () => {
          if (!window.confirm(t("endConfirm"))) return;
          setError(null);
          const res = await callApi<{ ended: string[] }>(`/api/cohorts/${cohortId}/end`, { method: "POST" });
          if (res.ok && res.body) {
            setText(t("endDone", { n: res.body.ended.length }));
            router.refresh();
          } else setError(res.error ?? t("failed"));
        }}
      >
        {t("endRun")}
      </button>
      {text && (
        <p role="status" className="mt-2 text-sm text-red-900">
          {text}
        </p>
      )}
      <Alert text={error} />
    </div>
  );
}
