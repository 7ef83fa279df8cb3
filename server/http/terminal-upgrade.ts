/**
 * Routes HTTP upgrades on TERMINAL_WS_PATH to the gateway, refusing sockets from another origin or
 * with none.
 * Everything else is left to the caller (Next.js dev hot reload uses /_next/hmr).
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { upgradeOriginRefusal } from "./guard";
import { handleTerminalSocket, LiveSockets, type GatewayDeps } from "../terminal/gateway";
import { CloseCode, MAX_CLIENT_FRAME_BYTES, TERMINAL_WS_PATH } from "../terminal/protocol";

export interface TerminalUpgrade {
  /** Handles the upgrade if it is for the terminal path; returns false otherwise. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /**
   * Closes every terminal socket with CloseCode.restarting so browsers reconnect at once
   * (elsewhere, through a proxy); sockets that still arrive afterwards get the same.
   */
  closeAll(): void;
  /**
   * Re-decides the attached sockets of `userId` (null: everyone's) and closes those refused now,
   * with the refusal's code and reason (wired to EventBus.onAccessChange).
   */
  recheckUser(userId: string | null): Promise<void>;
}

export interface UpgradeDeps extends GatewayDeps {
  /** The public origin (publicUrl(env)'s) sockets must come from; without it, the Host the request names. */
  allowedOrigin?: () => string;
}

export function terminalUpgrade(upgradeDeps: UpgradeDeps): TerminalUpgrade {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME_BYTES });
  const liveSockets = upgradeDeps.liveSockets ?? new LiveSockets();
  const deps: GatewayDeps = { ...upgradeDeps, userSockets: upgradeDeps.userSockets ?? new Map(), liveSockets };
  let draining = false;
  return {
    handle(req, socket, head) {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname !== TERMINAL_WS_PATH) return false;
      if (!sameOrigin(req, upgradeDeps.allowedOrigin)) {
        socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return true;
      }
      wss.handleUpgrade(req, socket, head, (ws) =>
        draining ? ws.close(CloseCode.restarting, "server restarting") : handleTerminalSocket(ws, req, deps),
      );
      return true;
    },
    closeAll() {
      draining = true;
      for (const ws of wss.clients) ws.close(CloseCode.restarting, "server restarting");
    },
    recheckUser: (userId) => liveSockets.recheckUser(userId),
  };
}

/**
 * The socket must come from a page of this server (no cross-site socket hijacking): its Origin
 * equals the public origin; a missing Origin is refused too (browsers always send one).
 */
function sameOrigin(req: IncomingMessage, allowedOrigin?: () => string): boolean {
  const origin = req.headers.origin;
  const allowed = allowedOrigin ? allowedOrigin() : `http://${req.headers.host}`;
  if (!allowedOrigin && origin) {
    // No configured origin (tests): the page's host must be the one the request names.
    try {
      return new URL(origin).host === req.headers.host;
    } catch {
      return false;
    }
  }
  return upgradeOriginRefusal(origin, allowed) === null;
}
