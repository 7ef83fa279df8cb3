"use client";
/** Email + password sign-in through better-auth's endpoint; on success, on to `next`. */
import { useTranslations } from "next-intl";
import { useState } from "react";

export function LoginForm({ next }: { next: string }) {
  const t = useTranslations("login");
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState(false);
  return (
    <form
      className="mt-6 space-y-4"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = new FormData(e.currentTarget);
        setBusy(true);
        setFailed(false);
        const res = await fetch("/api/auth/sign-in/email", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: form.get("email"), password: form.get("password") }),
        }).catch(() => null);
        if (res?.ok) return window.location.assign(next);
        setBusy(false);
        setFailed(true);
      }}
    >
      <label className="block text-sm">
        {t("email")}
        <input
          name="email"
          type="email"
          required
          autoComplete="username"
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
      </label>
      <label className="block text-sm">
        {t("password")}
        <input
          name="password"
          type="password"
          required
          autoComplete="current-password"
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
      </label>
      {failed && (
        <p role="alert" className="text-sm text-red-700">
          {t("failed")}
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
