"use client";
/** Signs out through better-auth's endpoint and goes to the login page. */
import { useTranslations } from "next-intl";

export function SignOutButton() {
  const t = useTranslations("common");
  return (
    <button
      type="button"
      className="text-xs text-slate-600 hover:text-sky-700"
      onClick={async () => {
        await fetch("/api/auth/sign-out", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).catch(
          () => undefined,
        );
        window.location.assign("/login");
      }}
    >
      {t("signOut")}
    </button>
  );
}
