/** next-intl's per-request configuration: the language cookie (Japanese by default) and its messages. */
import { cookies } from "next/headers";
import { getRequestConfig } from "next-intl/server";
import { MESSAGES } from "@/server/i18n/locale";
import { DEFAULT_LOCALE, isLocale, LOCALE_COOKIE } from "@/server/i18n/locales";

/** Dates and times are shown in the course's time zone. */
export const TIME_ZONE = "Asia/Tokyo";

export default getRequestConfig(async () => {
  const value = (await cookies()).get(LOCALE_COOKIE)?.value;
  const locale = isLocale(value) ? value : DEFAULT_LOCALE;
  return { locale, messages: MESSAGES[locale], timeZone: TIME_ZONE };
});
