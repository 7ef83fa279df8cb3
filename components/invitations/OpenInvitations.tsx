"use client";
/**
 * Open invitations (unused, unexpired, not revoked), each with its link, a copy button, its
 * expiry and a revoke button (DELETE /api/invitations/:id). Used on /admin/invitations and, for
 * a cohort's invitations, on the cohort's admin page.
 */
import { useTranslations } from "next-intl";
import { useState } from "react";
import { copyText } from "@/components/clipboard";
import { ConfirmDeleteButton } from "@/components/ConfirmDeleteButton";

export interface OpenInvitationRow {
  id: string;
  email: string;
  /** The role's label, already translated. */
  roleLabel: string;
  /** The expiry as the page formats times. */
  expires: string;
  /** Null for links made before links were kept (they cannot be shown again). */
  url: string | null;
}

/** How long a copy button shows its result, in milliseconds. */
const COPY_FEEDBACK_MS = 1500;

export function OpenInvitations({ rows, testId = "open-invitations" }: { rows: OpenInvitationRow[]; testId?: string }) {
  const t = useTranslations("invitations");
  if (rows.length === 0) return <p className="mt-2 text-sm text-slate-500">{t("noneOpen")}</p>;
  return (
    <table className="mt-2 w-full text-left text-sm" data-testid={testId}>
      <thead className="text-xs text-slate-500">
        <tr>
          <th className="py-1">{t("email")}</th>
          <th>{t("role")}</th>
          <th>{t("expires")}</th>
          <th>{t("link")}</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.id} className="border-t border-slate-200 align-top" data-email={r.email} data-invitation={r.id}>
            <td className="py-1">{r.email}</td>
            <td>{r.roleLabel}</td>
            <td className="whitespace-nowrap">{r.expires}</td>
            <td className="max-w-xs">
              {r.url ? <LinkWithCopy url={r.url} /> : <span className="text-xs text-slate-500">{t("linkNotKept")}</span>}
            </td>
            <td className="text-right">
              <RevokeButton id={r.id} email={r.email} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A link as text (selectable) with a copy button beside it. */
export function LinkWithCopy({ url, testId = "invitation-link" }: { url: string; testId?: string }) {
  const t = useTranslations("invitations");
  const [state, setState] = useState<"copied" | "failed" | null>(null);
  return (
    <span className="inline-flex flex-wrap items-center gap-2">
      <code data-testid={testId} className="break-all rounded bg-slate-100 px-1 py-0.5 text-xs">
        {url}
      </code>
      <button
        type="button"
        className="rounded border border-slate-300 px-2 py-0.5 text-xs hover:bg-slate-50"
        onClick={async () => {
          setState((await copyText(url)) ? "copied" : "failed");
          setTimeout(() => setState(null), COPY_FEEDBACK_MS);
        }}
      >
        {state === "copied" ? t("copied") : state === "failed" ? t("copyFailed") : t("copy")}
      </button>
    </span>
  );
}

function RevokeButton({ id, email }: { id: string; email: string }) {
  const t = useTranslations("invitations");
  return (
    <ConfirmDeleteButton
      url={`/api/invitations/${encodeURIComponent(id)}`}
      confirmText={t("revokeConfirm", { email })}
      label={t("revoke")}
      failedText={t("failed")}
    />
  );
}
