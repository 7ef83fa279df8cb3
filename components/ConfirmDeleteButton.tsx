"use client";
/**
 * A small red button that, after the person confirms, sends DELETE to `url` and refreshes the
 * page's server data; a refusal is shown under it. Used for removing cohort members and revoking
 * invitations.
 */
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/components/cohorts/api";

export function ConfirmDeleteButton({
  url,
  confirmText,
  label,
  failedText,
}: {
  url: string;
  confirmText: string;
  label: string;
  failedText: string;
}) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  return (
    <span className="inline-flex flex-col items-end">
      <button
        type="button"
        className="rounded border border-red-300 px-2 py-0.5 text-xs text-red-700 hover:bg-red-50"
        onClick={async () => {
          if (!window.confirm(confirmText)) return;
          setError(null);
          const res = await callApi(url, { method: "DELETE" });
          if (res.ok) router.refresh();
          else setError(res.error ?? failedText);
        }}
      >
        {label}
      </button>
      {error && (
        <span role="alert" className="text-xs text-red-700">
          {error}
        </span>
      )}
    </span>
  );
}
