/**
 * What server.ts prints when start-up fails: one line, `Labdeck could not start: <sentence>`,
 * saying what is wrong and what to do. Errors thrown with such a sentence (the environment, the
 * embedded database) pass through; a few system errors are named; anything else is kept to its
 * first line and points to the log, which holds the stack. Values that are not Errors (a library
 * rejecting with `undefined`) are reported as such instead of failing while being reported.
 */
export function startupFailureMessage(error: unknown): string {
  if (!(error instanceof Error)) {
    return `a start-up step failed without saying why (it gave ${describeValue(error)}); this is a bug: report it with the log above`;
  }
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.code === "EADDRINUSE" && e.syscall === "listen") {
    return `${e.address ?? "the address"}:${e.port ?? "?"} is already in use (another Labdeck server, or another program); stop it or set HOST/PORT to a free address`;
  }
  if (e.code === "EACCES" && e.syscall === "listen") {
    return `no permission to listen on ${e.address ?? "the address"}:${e.port ?? "?"}; use a PORT above 1023 or run as root`;
  }
  if (e.code === "EADDRNOTAVAIL" && e.syscall === "listen") {
    return `HOST ${e.address ?? ""} is not an address of this machine; set HOST to one of its addresses (e.g. 127.0.0.1 or 0.0.0.0)`;
  }
  const lines = e.message
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return `${e.name || "an error"} without a message; see the log above`;
  if (lines.length === 1) return lines[0]!;
  return `${lines[0]!.replace(/:$/, "")} (see the log above for the rest)`;
}

function describeValue(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? typeof value;
  } catch {
    return typeof value;
  }
}

/** A logger's `err` field: the Error itself (pino serializes its stack), or the value that was thrown. */
export function errorForLog(value: unknown): Error | { value: string } {
  return value instanceof Error ? value : { value: describeValue(value) };
}
