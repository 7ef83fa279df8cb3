"use client";
/** Name + password for an invitation; the server makes the account, signs it in, and we go home. */
import { useTranslations } from "next-intl";
import { useState } from "react";

export function AcceptForm({ token, minPassword }: { token: string; minPassword: number }) {
  const t = useTranslations("invite");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      className="mt-6 space-y-4"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = new FormData(e.currentTarget);
        setBusy(true);
        setError(null);
        const res = await fetch("/api/invitations/accept", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ token, name: form.get("name"), password: form.get("password") }),
        }).catch(() => null);
        if (res?.ok) return window.location.assign("/");
        const body = (await res?.json().catch(() => null)) as { error?: string } | null;
        setBusy(false);
        setError(body?.error ?? t("failed"));
      }}
    >
      <label className="block text-sm">
        {t("name")}
        <input
          name="name"
          required
          maxLength={100}
          autoComplete="name"
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
      </label>
      <label className="block text-sm">
        {t("password")}
        <input
          name="password"
          type="password"
          required
          minLength={minPassword}
          autoComplete="new-password"
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
        <span className="text-xs text-slate-500">{t("passwordHint", { min: minPassword })}</span>
      </label>
      {error && (
        <p role="alert" className="text-sm text-red-700">
          {error}
        </p>
      )}
      <button
        type="submit"
        disabled={busy}
        className="w-full rounded bg-sky-600 py-2 text-sm font-semibold text-white hover:bg-sky-700 disabled:opacity-60"
      >
        {busy ? t("submitting") : t("submit")}
      </button>
    </form>
  );
}
