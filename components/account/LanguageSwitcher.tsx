"use client";
/** Japanese / English: stores the choice in the language cookie and re-renders the page. */
import { useLocale, useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { LOCALE_COOKIE, LOCALES } from "@/server/i18n/locales";

/** The language cookie lives a year, in seconds. */
const LOCALE_COOKIE_MAX_AGE_S = 365 * 24 * 60 * 60;

export function LanguageSwitcher() {
  const t = useTranslations("common");
  const locale = useLocale();
  const router = useRouter();
  return (
    <label className="flex items-center gap-1 text-xs text-slate-600">
      <span className="sr-only">{t("language")}</span>
      <select
        aria-label={t("language")}
        data-testid="language"
        className="rounded border border-slate-200 bg-white px-1 py-0.5"
        value={locale}
        onChange={(e) => {
          document.cookie = `${LOCALE_COOKIE}=${e.target.value}; path=/; max-age=${LOCALE_COOKIE_MAX_AGE_S}; samesite=lax`;
          router.refresh();
        }}
      >
        {LOCALES.map((l) => (
          <option key={l} value={l}>
            {t(`languageNames.${l}`)}
          </option>
        ))}
      </select>
    </label>
  );
}
