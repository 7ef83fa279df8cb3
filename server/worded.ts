/**
 * What domain code says to people: a message key under "errors" in messages/{ja,en}.json and its
 * values, never a sentence. The edge that answers (an API route, a page, a socket) words it in the
 * reader's language (server/i18n/locale.ts errorMessage). Kept as a string where a row holds text
 * (a failed start's reason): `encodeWorded`, read back with `decodeWorded`.
 */
export interface Worded {
  key: string;
  params?: Record<string, string | number>;
}

/** Prefix of a worded message stored as text; anything else stored there is shown as it is. */
const PREFIX = "worded:";

export function encodeWorded(worded: Worded): string {
  return PREFIX + JSON.stringify(worded);
}

/** The worded message stored in `text`, or null when `text` is plain (an error's own words). */
export function decodeWorded(text: string): Worded | null {
  if (!text.startsWith(PREFIX)) return null;
  try {
    const value = JSON.parse(text.slice(PREFIX.length)) as Partial<Worded>;
    if (typeof value.key !== "string") return null;
    const params = value.params && typeof value.params === "object" ? value.params : undefined;
    return { key: value.key, params };
  } catch {
    return null;
  }
}
