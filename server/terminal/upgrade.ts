/**
 * Routes HTTP upgrades on TERMINAL_WS_PATH to the gateway, refusing cross-origin browser sockets.
 * Everything else is left to the caller (Next.js dev hot reload uses /_next/hmr).
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { handleTerminalSocket, type GatewayDeps } from "./gateway";
import { CloseCode, MAX_CLIENT_FRAME_BYTES, TERMINAL_WS_PATH } from "./protocol";

export interface TerminalUpgrade {
  /** Handles the upgrade if it is for the terminal path; returns false otherwise. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes every terminal socket with "going away" so clients reconnect elsewhere. */
  closeAll(): void;
}

export function terminalUpgrade(deps: GatewayDeps): TerminalUpgrade {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME_BYTES });
  return {
    handle(req, socket, head) {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname !== TERMINAL_WS_PATH) return false;
      if (!sameOrigin(req)) {
        socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return true;
      }
      wss.handleUpgrade(req, socket, head, (ws) => handleTerminalSocket(ws, req, deps));
      return true;
    },
    closeAll() {
      for (const ws of wss.clients) ws.close(CloseCode.goingAway, "server restarting");
    },
  };
}

/** A browser's WebSocket must come from a page of this server (no cross-site socket hijacking). */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (!origin) return true; // not a browser; the token still decides
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}
