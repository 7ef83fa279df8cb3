/** UI languages and the cookie that picks one; shared by server and browser code. */
export const LOCALES = ["ja", "en"] as const;
export type Locale = (typeof LOCALES)[number];
export const DEFAULT_LOCALE: Locale = "ja";
/** Cookie holding the chosen UI language. */
export const LOCALE_COOKIE = "labdeck_locale";

export function isLocale(value: unknown): value is Locale {
  return value === "ja" || value === "en";
}
