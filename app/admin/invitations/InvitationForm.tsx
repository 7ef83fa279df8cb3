"use client";
/** Makes an invitation through POST /api/invitations, shows its link with a copy button and clears the form. */
import { useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { LinkWithCopy } from "@/components/invitations/OpenInvitations";

export function InvitationForm() {
  const t = useTranslations("admin");
  const roles = useTranslations("common.roles");
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <div className="mt-6 rounded-lg border border-slate-200 bg-white p-4">
      <form
        className="flex flex-wrap items-end gap-3"
        onSubmit={async (e) => {
          e.preventDefault();
          const element = e.currentTarget;
          const form = new FormData(element);
          setBusy(true);
          setError(null);
          setUrl(null);
          const res = await fetch("/api/invitations", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: form.get("email"), role: form.get("role"), days: Number(form.get("days")) }),
          }).catch(() => null);
          const body = (await res?.json().catch(() => null)) as { url?: string; error?: string } | null;
          setBusy(false);
          if (res?.ok && body?.url) {
            setUrl(body.url);
            element.reset();
            router.refresh();
          } else setError(body?.error ?? t("failed"));
        }}
      >
        <label className="text-sm">
          {t("email")}
          <input name="email" type="email" required className="mt-1 block w-64 rounded border border-slate-300 px-2 py-1.5" />
        </label>
        <label className="text-sm">
          {t("role")}
          <select name="role" defaultValue="learner" className="mt-1 block rounded border border-slate-300 px-2 py-1.5">
            {(["learner", "instructor", "admin"] as const).map((r) => (
              <option key={r} value={r}>
                {roles(r)}
              </option>
            ))}
          </select>
        </label>
        <label className="text-sm">
          {t("days")}
          <input
            name="days"
            type="number"
            min={1}
            max={90}
            defaultValue={14}
            className="mt-1 block w-20 rounded border border-slate-300 px-2 py-1.5"
          />
        </label>
        <button
          type="submit"
          disabled={busy}
          className="rounded bg-sky-600 px-4 py-2 text-sm font-semibold text-white hover:bg-sky-700 disabled:opacity-60"
        >
          {busy ? t("creating") : t("create")}
        </button>
      </form>
      {url && (
        <p className="mt-4 text-sm">
          {t("created")} <LinkWithCopy url={url} testId="invitation-url" />
        </p>
      )}
      {error && (
        <p role="alert" className="mt-4 text-sm text-red-700">
          {error}
        </p>
      )}
    </div>
  );
}
