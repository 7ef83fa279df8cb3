// @vitest-environment jsdom
/**
 * One terminal as the page mounts it: a real xterm in jsdom on a real WebSocket to a stand-in
 * gateway on loopback (`ws`; the page's socket URL is pointed at it), with the lab session API
 * answered at fetch. The hooks it is built from (xterm, connection, input, fit, handle) are the
 * component's own and run as in the browser; only what jsdom lacks (matchMedia, ResizeObserver,
 * a canvas) is filled in.
 */
import { act, cleanup, configure, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import type { AddressInfo } from "node:net";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import en from "@/messages/en.json";
import { CloseCode, encodeOutput, TERMINAL_WS_PATH, type ServerMessage } from "@/server/terminal/protocol";
import { Terminal } from "./Terminal";
import type { TerminalHandle } from "./terminal-registry";

// findBy and waitFor wait up to 5 s rather than 1 s: test machines are small and shared, and a jsdom render can take a while there.
configure({ asyncUtilTimeout: 5_000 });

/** What the stand-in gateway got on one socket. */
interface Socket {
  ws: WebSocket;
  path: string;
  received: { type: string; [key: string]: unknown }[];
  closed?: { code: number; reason: string };
}

let wss: WebSocketServer;
let sockets: Socket[];
let slug: string;
let labs = 0;
let requests: { method: string; url: string }[];

beforeAll(() => {
  // xterm asks for these at open; jsdom has no layout, no media queries and no canvas.
  window.matchMedia = ((query: string) => ({
    matches: false,
    media: query,
    addListener() {},
    removeListener() {},
    addEventListener() {},
    removeEventListener() {},
  })) as never;
  HTMLCanvasElement.prototype.getContext = (() => null) as never;
  globalThis.ResizeObserver = class {
    observe() {}
    unobserve() {}
    disconnect() {}
  };
});

beforeEach(async () => {
  sockets = [];
  requests = [];
  slug = `lab-${++labs}`;
  wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((r) => wss.once("listening", r));
  wss.on("connection", (ws, request) => {
    const socket: Socket = { ws, path: request.url ?? "", received: [] };
    sockets.push(socket);
    ws.on("message", (raw) => socket.received.push(JSON.parse(String(raw)) as Socket["received"][number]));
    ws.on("close", (code, reason) => (socket.closed = { code, reason: String(reason) }));
  });
  const port = (wss.address() as AddressInfo).port;
  // The page opens ws://<its own host>/ws/terminal; here that host is the stand-in gateway.
  vi.stubGlobal(
    "WebSocket",
    class PageWebSocket extends WebSocket {
      constructor(url: string) {
        super(url.replace(`//${location.host}/`, `//127.0.0.1:${port}/`));
      }
    },
  );
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      const method = init?.method ?? "GET";
      requests.push({ method, url });
      if (method === "POST" && url === `/api/labs/${slug}/session?async=1`) {
        const machines = ["node01"].map((name) => ({ name, token: `token-${name}` }));
        return Response.json({ sessionId: "sess-1", machines, tabs: [{ machine: "node01", number: 2, token: "token-node01#2" }] });
      }
      if (method === "POST" && url === "/api/sessions/sess-1/machines/node01/start") return Response.json({ ok: true });
      throw new Error(`unexpected request: ${method} ${url}`);
    }),
  );
});

afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  for (const ws of wss.clients) ws.terminate();
  await new Promise((r) => wss.close(r));
});

function mount(props: Partial<Parameters<typeof Terminal>[0]> = {}) {
  return render(
    <NextIntlClientProvider locale="en" messages={en}>
      <Terminal slug={slug} machine="node01" active {...props} />
    </NextIntlClientProvider>,
  );
}

/** The gateway's side of the page's next socket, once its hello has come. */
async function hello(index = 0): Promise<Socket> {
  await waitFor(() => expect(sockets[index]?.received[0]?.type).toBe("hello"));
  return sockets[index]!;
}

function send(socket: Socket, message: ServerMessage): void {
  socket.ws.send(JSON.stringify(message));
}

function handle(name: string): TerminalHandle {
  const found = window.__labdeck?.terminals[name];
  if (!found) throw new Error(`${name} is not registered`);
  return found;
}

describe("Terminal", () => {
  it("attaches with its session's token, shows the shell's output and types into it", async () => {
    mount();
    const terminal = screen.getByTestId("terminal-node01");
    expect(terminal.dataset.status).toBe("connecting");
    expect(screen.getByRole("status").textContent).toBe("node01: Connecting…");

    const gateway = await hello();
    expect(gateway.path).toBe(TERMINAL_WS_PATH);
    expect(gateway.received[0]).toMatchObject({ type: "hello", token: "token-node01", offset: 0 });
    expect(requests).toEqual([{ method: "POST", url: `/api/labs/${slug}/session?async=1` }]);

    send(gateway, { type: "ready", machine: "node01", mode: "write", offset: 0 });
    send(gateway, { type: "status", state: "connected" });
    await waitFor(() => expect(terminal.dataset.status).toBe("connected"));
    expect(screen.queryByRole("status")).toBeNull();

    const prompt = new TextEncoder().encode("Welcome\r\nroot@node01:~# ");
    gateway.ws.send(encodeOutput(0, prompt));
    await waitFor(() => expect(handle("node01").text()).toContain("root@node01:~#"));
    expect(handle("node01").text().split("\n").slice(0, 2)).toEqual(["Welcome", "root@node01:~# "]);
    expect(handle("node01").bytesReceived()).toBe(prompt.byteLength);
    expect(handle("node01").cursorLine()).toBe("root@node01:~# "); // a typed space is a cell, not trimmed

    handle("node01").type("uname -n\r");
    await waitFor(() => expect(gateway.received.at(-1)).toEqual({ type: "input", seq: 1, data: "uname -n\r" }));
  });

  it("asks for an extra shell's own token, under its own name", async () => {
    mount({ number: 2 });
    const terminal = screen.getByTestId("terminal-node01#2");
    expect([terminal.dataset.machine, terminal.dataset.number]).toEqual(["node01", "2"]);

    const gateway = await hello();
    expect(gateway.received[0]).toMatchObject({ type: "hello", token: "token-node01#2" });
    send(gateway, { type: "ready", machine: "node01", mode: "write", offset: 0 });
    gateway.ws.send(encodeOutput(0, new TextEncoder().encode("second shell")));
    await waitFor(() => expect(handle("node01#2").text()).toContain("second shell"));
    expect(window.__labdeck?.terminals.node01).toBeUndefined();
  });

  it("says why it cannot attach and offers a reload", async () => {
    mount();
    const gateway = await hello();
    gateway.ws.close(CloseCode.notFound, "no such session");

    await waitFor(() => expect(screen.getByTestId("terminal-node01").dataset.status).toBe("failed"));
    expect(screen.getByRole("status").textContent).toBe("node01: This session has ended. Please reload the page.Reload");
    expect(screen.getByRole("button", { name: "Reload" })).toBeTruthy();
  });

  it("says so when the session has no such terminal, without opening a socket", async () => {
    mount({ machine: "node02" });
    await waitFor(() => expect(screen.getByTestId("terminal-node02").dataset.status).toBe("failed"));
    expect(screen.getByRole("status").textContent).toBe("node02: This lab has no node02Reload");
    expect(sockets).toEqual([]);
  });

  it("offers to power a stopped machine on", async () => {
    mount();
    const gateway = await hello();
    send(gateway, { type: "ready", machine: "node01", mode: "write", offset: 0 });
    send(gateway, { type: "status", state: "stopped" });

    const start = await screen.findByRole("button", { name: "Power on" });
    expect(screen.getByRole("status").textContent).toBe("node01: Powered offPower on");
    fireEvent.click(start);
    await waitFor(() => expect(requests.at(-1)).toEqual({ method: "POST", url: "/api/sessions/sess-1/machines/node01/start" }));
    await waitFor(() => expect(start.hasAttribute("disabled")).toBe(false));
    expect(start.textContent).toBe("Power on");
  });

  it("watches read-only with the tokens it is given, at the writer's size", async () => {
    const tokenSource = vi.fn(async () => new Map([["node01", "read-token"]]));
    mount({ tokenSource, readOnly: true });

    const gateway = await hello();
    expect(gateway.received[0]).toMatchObject({ type: "hello", token: "read-token" });
    expect(tokenSource).toHaveBeenCalledWith(false);
    expect(requests).toEqual([]); // not the learner's own session
    send(gateway, { type: "ready", machine: "node01", mode: "read", offset: 0 });
    send(gateway, { type: "size", cols: 100, rows: 30 });
    await waitFor(() => expect(screen.getByTestId("terminal-node01").dataset.writerSize).toBe("100x30"));
    expect(handle("node01").size()).toEqual({ cols: 100, rows: 30 });

    // The lines the learner is shown that are not output (a reboot) show here too, on lines of their own.
    const before = new TextEncoder().encode("root@node01:~# reboot\r\nroot@node01:~# ");
    const after = new TextEncoder().encode("root@node01:~# ");
    gateway.ws.send(encodeOutput(0, before));
    send(gateway, { type: "notice", notice: "rebooted", text: "(the platform's words)" });
    gateway.ws.send(encodeOutput(before.byteLength, after));
    await waitFor(() => expect(handle("node01").bytesReceived()).toBe(before.byteLength + after.byteLength));
    await waitFor(() =>
      expect(handle("node01").text().split("\n").slice(0, 4)).toEqual([
        "root@node01:~# reboot",
        "root@node01:~# ",
        "[node01 was rebooted. This is a new shell]",
        "root@node01:~# ",
      ]),
    );
  });

  it("shows why it is not connected over the terminal, not above it: the grid, and so the shell's size, stays as it was while it reconnects", async () => {
    mount();
    const gateway = await hello();
    send(gateway, { type: "ready", machine: "node01", mode: "write", offset: 0 });
    send(gateway, { type: "status", state: "connected" });
    await waitFor(() => expect(screen.queryByRole("status")).toBeNull());
    gateway.ws.close(4000, "dropped");
    const banner = await screen.findByRole("status");
    // jsdom lays nothing out: what keeps the pane's size is that the banner is out of the flow.
    expect(banner.className.split(" ")).toEqual(expect.arrayContaining(["absolute", "top-0"]));
    expect(banner.parentElement!.className.split(" ")).toContain("relative");
  });

  it("closes its socket and leaves the page's registry when it unmounts", async () => {
    const { unmount } = mount();
    const gateway = await hello();
    send(gateway, { type: "ready", machine: "node01", mode: "write", offset: 0 });
    await waitFor(() => expect(window.__labdeck?.terminals.node01).toBeDefined());

    await act(async () => unmount());
    await waitFor(() => expect(gateway.closed).toEqual({ code: 1000, reason: "page closed" }));
    expect(window.__labdeck?.terminals.node01).toBeUndefined();
    expect(sockets).toHaveLength(1); // and does not reconnect
  });
});
