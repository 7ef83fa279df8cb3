/** next-intl's per-request configuration: the language cookie (Japanese by default), its messages, the platform time zone and the date formats. */
import { cookies } from "next/headers";
import { getRequestConfig } from "next-intl/server";
import { timeZoneFromEnv } from "@/server/config";
import { MESSAGES } from "@/server/i18n/locale";
import { DEFAULT_LOCALE, isLocale, LOCALE_COOKIE } from "@/server/i18n/locales";
import { DATE_TIME_FORMATS } from "@/server/i18n/time-zone";

export default getRequestConfig(async () => {
  const value = (await cookies()).get(LOCALE_COOKIE)?.value;
  const locale = isLocale(value) ? value : DEFAULT_LOCALE;
  // NextIntlClientProvider (app/layout.tsx) passes timeZone and formats on to client components,
  // so they format in the platform zone rather than the browser's.
  return { locale, messages: MESSAGES[locale], timeZone: timeZoneFromEnv(), formats: DATE_TIME_FORMATS };
});
