"use client";
/** The signed-in account joins the invitation's cohort (POST /api/invitations/join), then goes home. */
import { useTranslations } from "next-intl";
import { useState } from "react";
import { callApi } from "@/components/cohorts/api";

export function JoinButton({ token }: { token: string }) {
  const t = useTranslations("invite");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <div>
      <button
        type="button"
        disabled={busy}
        className="w-full rounded bg-sky-600 py-2 text-sm font-semibold text-white hover:bg-sky-700 disabled:opacity-60"
        onClick={async () => {
          setBusy(true);
          setError(null);
          const res = await callApi("/api/invitations/join", { method: "POST", json: { token } });
          if (res.ok) return window.location.assign("/");
          setBusy(false);
          setError(res.error ?? t("failed"));
        }}
      >
        {busy ? t("joining") : t("join")}
      </button>
      {error && (
        <p role="alert" className="mt-2 text-sm text-red-700">
          {error}
        </p>
      )}
    </div>
  );
}
