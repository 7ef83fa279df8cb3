"use client";
/**
 * One terminal's TerminalConnection over its opened xterm: the token it asks for, the screen it
 * writes to, and the status it reports, worded in the page's language.
 */
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState, type RefObject } from "react";
import { TerminalConnection, type ConnectionMessages, type ConnectionStatus, type TerminalScreen } from "./connection";
import { TOKEN_REFRESH_MS, sessionErrorText, sessionTokens, tokensAgeMs } from "./session-tokens";
import { scaleToFit, type XtermView } from "./useXterm";

/** A started connection and the xterm it writes to. */
export interface AttachedTerminal {
  view: XtermView;
  connection: TerminalConnection;
}

/** Where a terminal's token comes from (Terminal's `tokenSource`): all tokens of the session, by terminal name. */
export type TokenSource = (fresh: boolean) => Promise<Map<string, string>>;

type Translate = ReturnType<typeof useTranslations<"terminal">>;
type TranslateRevoked = ReturnType<typeof useTranslations<"revoked">>;

export interface TerminalConnectionState {
  /** Null until the xterm is open. */
  attached: AttachedTerminal | null;
  status: ConnectionStatus;
  message: string | undefined;
  /** Read-only view: the learner's "COLSxROWS" it renders at, once the gateway has said. */
  writerSize: string | undefined;
}

/**
 * Starts a connection for terminal `name` of `machine` once `view` is open and stops it when the
 * terminal goes. Without a `tokenSource`, tokens are the learner's own session of `slug`.
 */
export function useTerminalConnection(
  view: XtermView | null,
  options: { slug: string; machine: string; name: string; readOnly: boolean; tokenSource: TokenSource | undefined },
): TerminalConnectionState {
  const { slug, machine, name, readOnly } = options;
  const tokenSourceRef = useRef(options.tokenSource);
  tokenSourceRef.current = options.tokenSource;
  const [attached, setAttached] = useState<AttachedTerminal | null>(null);
  const [status, setStatus] = useState<ConnectionStatus>("connecting");
  const [message, setMessage] = useState<string | undefined>();
  const [writerSize, setWriterSize] = useState<string | undefined>();
  // Read inside the connection's callbacks, so a language switch does not reconnect.
  const t = useTranslations("terminal");
  const tRef = useRef(t);
  tRef.current = t;
  const tRevoked = useTranslations("revoked");
  const tRevokedRef = useRef(tRevoked);
  tRevokedRef.current = tRevoked;

  useEffect(() => {
    if (!view) return;
    const token = (fresh: boolean) => terminalToken({ slug, name, fresh, source: tokenSourceRef.current, tRef });
    const connection = new TerminalConnection(machine, token, xtermScreen(view, readOnly, setWriterSize), {
      onStatus: (s, m) => {
        setStatus(s);
        setMessage(m);
      },
      messages: connectionMessages(tRef, tRevokedRef),
    });
    connection.start();
    setAttached({ view, connection });
    return () => {
      connection.stop();
      setAttached(null);
    };
  }, [view, slug, machine, name, readOnly]);

  return { attached, status, message, writerSize };
}

/** Terminal `name`'s token: from `source` (the watch view's read tokens), else from the learner's session of `slug`. */
async function terminalToken(args: {
  slug: string;
  name: string;
  fresh: boolean;
  source: TokenSource | undefined;
  tRef: RefObject<Translate>;
}) {
  const { slug, name, fresh, source, tRef } = args;
  const tokens = source
    ? await source(fresh)
    : // Old tokens are renewed before they are presented: a restart must not cost a refusal.
      (
        await sessionTokens(slug, fresh || tokensAgeMs(slug) > TOKEN_REFRESH_MS).catch((error: unknown) => {
          throw new Error(sessionErrorText(error, tRef.current));
        })
      ).tokens;
  const token = tokens.get(name);
  if (!token) throw new Error(tRef.current("noMachine", { machine: name }));
  return token;
}

/** The connection's screen: the xterm; a read-only view also takes the writer's size and scales it to its pane. */
function xtermScreen({ term, host }: XtermView, readOnly: boolean, setWriterSize: (size: string) => void): TerminalScreen {
  return {
    write: (data, written) => term.write(data, written),
    reset: () => term.reset(),
    size: () => ({ cols: Math.max(term.cols, 2), rows: Math.max(term.rows, 1) }),
    writerSize: ({ cols, rows }) => {
      if (!readOnly) return;
      term.resize(cols, rows);
      setWriterSize(`${cols}x${rows}`);
      requestAnimationFrame(() => scaleToFit(host, term.element)); // after xterm has laid out the new grid
    },
  };
}

/** The connection's own reports in the page's current language (read when shown). */
function connectionMessages(tRef: RefObject<Translate>, tRevokedRef: RefObject<TranslateRevoked>): ConnectionMessages {
  return {
    get lost() {
      return tRef.current("lost");
    },
    get closeUnauthorized() {
      return tRef.current("closeUnauthorized");
    },
    get closeForbidden() {
      return tRef.current("closeForbidden");
    },
    get closeNotFound() {
      return tRef.current("closeNotFound");
    },
    sessionOver: (reason) => tRef.current(`sessionOver.${reason}`),
    revoked: (reason) => tRevokedRef.current(reason),
    closed: (code, reason) => tRef.current("closed", { code, reason }),
    notice: (notice, machine) => tRef.current(`notice.${notice}`, { machine }),
    reason: (reason, machine) => tRef.current(`reason.${reason}`, { machine }),
  };
}
