/**
 * A refusal that domain code throws and every edge answers the same way: an HTTP status and a
 * message key under "errors" in messages/{ja,en}.json (the API, pages and sockets translate it).
 */
export class Denied extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409,
    /** Message key under "errors" in messages/*.json. */
    readonly code: string,
  ) {
    super(code);
  }
}
