/**
 * UI languages. Japanese is the default; English is switchable with a cookie the language
 * switcher sets. Messages live in messages/<locale>.json (same keys in both, tested).
 */
import { createTranslator } from "next-intl";
import en from "../../messages/en.json";
import ja from "../../messages/ja.json";
import { decodeWorded } from "../worded";
import { DEFAULT_LOCALE, isLocale, LOCALE_COOKIE, type Locale } from "./locales";

export type Messages = typeof ja;
export const MESSAGES: Record<Locale, Messages> = { ja, en };

/** The locale named by a request's cookies, else the default. */
export function localeFromHeaders(headers: Headers): Locale {
  const cookie = headers.get("cookie") ?? "";
  const match = new RegExp(`(?:^|;\\s*)${LOCALE_COOKIE}=([a-z]{2})`).exec(cookie);
  return match && isLocale(match[1]) ? match[1] : DEFAULT_LOCALE;
}

/** An API error message (a key under "errors", with its values) in the request's language. */
export function errorMessage(locale: Locale, code: string, params?: Record<string, string | number>): string {
  const t = createTranslator({ locale, messages: MESSAGES[locale], namespace: "errors" });
  return t.has(code as never) ? t(code as never, params as never) : t("unknown");
}

/** Text a row holds for people: a worded message (server/worded.ts) in `locale`, anything else as it is. */
export function storedText(locale: Locale, text: string): string {
  const worded = decodeWorded(text);
  return worded ? errorMessage(locale, worded.key, worded.params) : text;
}

/** A terminal notice as the line a terminal shows (framed by line breaks), in `locale`. */
export function terminalNoticeText(locale: Locale, notice: keyof Messages["terminal"]["notice"], machine: string): string {
  const t = createTranslator({ locale, messages: MESSAGES[locale], namespace: "terminal.notice" });
  return `\r\n${t(notice, { machine })}\r\n`;
}

/** Why a machine's terminal is not connected, in `locale`. */
export function statusReasonText(locale: Locale, reason: keyof Messages["terminal"]["reason"], machine: string): string {
  const t = createTranslator({ locale, messages: MESSAGES[locale], namespace: "terminal.reason" });
  return t(reason, { machine });
}
