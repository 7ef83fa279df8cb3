// @vitest-environment jsdom
/**
 * The terminal tab bar: one tab per machine, the learner's extra shells after their machine's
 * tab, opening and closing them on the tab API (fetch is the far edge, answered here) up to
 * MAX_SHELLS_PER_MACHINE, and switching the active tab. The terminals themselves (xterm on a
 * WebSocket, which jsdom cannot run) are stand-ins that show which shell they would attach to.
 */
import { act, cleanup, configure, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { useState } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import en from "@/messages/en.json";
import { sessionTokens } from "@/components/terminal/session-tokens";
import { MAX_SHELLS_PER_MACHINE, type TabView } from "@/server/terminal/tab-names";
import { TerminalTabs } from "./TerminalTabs";

// findBy and waitFor wait up to 5 s rather than 1 s: test machines are small and shared, and a jsdom render can take a while there.
configure({ asyncUtilTimeout: 5_000 });

vi.mock("@/components/terminal/Terminal", () => ({
  Terminal: (props: { slug: string; machine: string; number?: number; active: boolean }) => (
    <div data-testid="terminal" data-slug={props.slug} data-machine={props.machine} data-number={props.number} data-active={props.active} />
  ),
}));

const MACHINES = ["controlplane", "node01"];
const SESSION = "sess-1";

/** session-tokens.ts keeps one start per lab for the page's life: each test has a lab of its own. */
let slug: string;
let labs = 0;
let onSelect: ReturnType<typeof vi.fn<(name: string) => void>>;

type Route = (init: RequestInit | undefined) => Response | Promise<Response>;
let routes: Map<string, Route>;
let requests: { method: string; url: string; body?: unknown }[];

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** The lab session API's answer: a token per machine and per open extra tab. */
function sessionAnswer(tabs: TabView[] = []) {
  return () =>
    json({
      sessionId: SESSION,
      machines: MACHINES.map((name) => ({ name, token: `token-${name}` })),
      tabs: tabs.map((t) => ({ ...t, token: `token-${t.machine}-${t.number}` })),
    });
}

/** The workspace's part: it owns the active terminal's name. */
function Workspace({ initial = "controlplane" }: { initial?: string }) {
  const [active, setActive] = useState<string | undefined>(initial);
  return (
    <NextIntlClientProvider locale="en" messages={en}>
      <TerminalTabs
        slug={slug}
        machines={MACHINES}
        active={active}
        onSelect={(name) => {
          onSelect(name);
          setActive(name);
        }}
      />
    </NextIntlClientProvider>
  );
}

beforeEach(() => {
  slug = `lab-${++labs}`;
  onSelect = vi.fn<(name: string) => void>();
  routes = new Map([[`POST /api/labs/${slug}/session?async=1`, sessionAnswer()]]);
  requests = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      const method = init?.method ?? "GET";
      requests.push({ method, url, ...(init?.body ? { body: JSON.parse(String(init.body)) } : {}) });
      const route = routes.get(`${method} ${url}`);
      if (!route) throw new Error(`unexpected request: ${method} ${url}`);
      return route(init);
    }),
  );
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

function tabs(): HTMLElement[] {
  return screen.getAllByRole("tab");
}

function tab(name: string): HTMLElement {
  return screen.getAllByRole("tab").find((t) => t.dataset.terminal === name)!;
}

/** The tab panel of a terminal and the stand-in terminal in it. */
function panel(name: string): { panel: HTMLElement; terminal: HTMLElement } {
  const panel = screen.getAllByRole("tabpanel", { hidden: true }).find((p) => p.dataset.terminal === name)!;
  return { panel, terminal: within(panel).getByTestId("terminal") };
}

/** Waits until the extra tabs the session already has are loaded (the page's first session answer). */
async function loaded(): Promise<void> {
  await waitFor(() => expect(requests.some((r) => r.url === `/api/labs/${slug}/session?async=1`)).toBe(true));
  await act(async () => {
    await sessionTokens(slug);
  });
}

describe("TerminalTabs", () => {
  it("has one tab and one terminal per machine, the active one selected and visible", async () => {
    render(<Workspace />);
    await loaded();

    expect(screen.getByRole("tablist", { name: "Machines" })).toBeTruthy();
    expect(tabs().map((t) => [t.textContent, t.dataset.machine, t.dataset.terminal])).toEqual([
      ["controlplane", "controlplane", "controlplane"],
      ["node01", "node01", "node01"],
    ]);
    expect(tab("controlplane").getAttribute("aria-selected")).toBe("true");
    expect(tab("controlplane").tabIndex).toBe(0);
    expect(tab("node01").getAttribute("aria-selected")).toBe("false");
    expect(tab("node01").tabIndex).toBe(-1);

    const cp = panel("controlplane");
    expect(tab("controlplane").getAttribute("aria-controls")).toBe(cp.panel.id);
    expect(cp.panel.getAttribute("aria-labelledby")).toBe(tab("controlplane").id);
    expect(cp.panel.className).toContain("visible");
    expect(cp.panel.className).not.toContain("invisible");
    expect(panel("node01").panel.className).toContain("invisible");
    expect([cp.terminal.dataset.slug, cp.terminal.dataset.machine, cp.terminal.dataset.number, cp.terminal.dataset.active]).toEqual([
      slug,
      "controlplane",
      "1",
      "true",
    ]);
    expect(panel("node01").terminal.dataset.active).toBe("false");
    // A machine's first shell has no close button.
    expect(screen.queryByTestId("close-shell-controlplane")).toBeNull();
  });

  it("switches the active tab on a click and with the arrow keys, keeping every terminal mounted", async () => {
    routes.set(`POST /api/labs/${slug}/session?async=1`, sessionAnswer([{ machine: "controlplane", number: 2 }]));
    render(<Workspace />);
    await waitFor(() => expect(tabs()).toHaveLength(3));

    fireEvent.click(tab("node01"));
    expect(onSelect).toHaveBeenLastCalledWith("node01");
    expect(tab("node01").getAttribute("aria-selected")).toBe("true");
    expect(tab("controlplane").getAttribute("aria-selected")).toBe("false");
    expect(panel("node01").terminal.dataset.active).toBe("true");
    expect(panel("controlplane").terminal.dataset.active).toBe("false");
    expect(panel("controlplane").panel.className).toContain("invisible");

    // Arrow keys move along the tabs (controlplane, controlplane #2, node01) and wrap around (the WAI-ARIA tabs pattern).
    fireEvent.keyDown(tab("node01"), { key: "ArrowRight" });
    expect(onSelect).toHaveBeenLastCalledWith("controlplane");
    expect(document.activeElement).toBe(tab("controlplane"));
    fireEvent.keyDown(tab("controlplane"), { key: "ArrowRight" });
    expect(onSelect).toHaveBeenLastCalledWith("controlplane#2");
    expect(document.activeElement).toBe(tab("controlplane#2"));
    fireEvent.keyDown(tab("controlplane#2"), { key: "ArrowLeft" });
    fireEvent.keyDown(tab("controlplane"), { key: "ArrowLeft" });
    expect(onSelect).toHaveBeenLastCalledWith("node01");
    expect(document.activeElement).toBe(tab("node01"));
    fireEvent.keyDown(tab("node01"), { key: "Enter" });
    expect(onSelect).toHaveBeenCalledTimes(5);
  });

  it("shows the extra shells the session already has after their machine's tab", async () => {
    routes.set(`POST /api/labs/${slug}/session?async=1`, sessionAnswer([{ machine: "controlplane", number: 3 }]));
    render(<Workspace />);

    await waitFor(() => expect(tabs()).toHaveLength(3));
    expect(tabs().map((t) => t.textContent)).toEqual(["controlplane", "controlplane #3", "node01"]);
    expect(tab("controlplane#3").dataset.machine).toBe("controlplane");
    expect(panel("controlplane#3").terminal.dataset.number).toBe("3");
    expect(screen.getByTestId("close-shell-controlplane#3").getAttribute("aria-label")).toBe("Close controlplane #3");
  });

  it("opens another shell on the active machine and switches to it", async () => {
    routes.set(`POST /api/sessions/${SESSION}/tabs`, () => json({ machine: "node01", number: 2, token: "token-node01-2" }));
    render(<Workspace initial="node01" />);
    await loaded();

    const add = screen.getByTestId("new-shell");
    expect(add.getAttribute("aria-label")).toBe("Open another shell on node01");
    fireEvent.click(add);

    await waitFor(() => expect(tabs()).toHaveLength(3));
    expect(requests.at(-1)).toEqual({ method: "POST", url: `/api/sessions/${SESSION}/tabs`, body: { machine: "node01" } });
    expect(tabs().map((t) => t.textContent)).toEqual(["controlplane", "node01", "node01 #2"]);
    expect(onSelect).toHaveBeenLastCalledWith("node01#2");
    expect(tab("node01#2").getAttribute("aria-selected")).toBe("true");
    expect(panel("node01#2").terminal.dataset.active).toBe("true");
    // The new shell's token joins the page's session answer, where its terminal asks for it.
    expect((await sessionTokens(slug)).tokens.get("node01#2")).toBe("token-node01-2");
  });

  it("says why a shell could not be opened", async () => {
    routes.set(`POST /api/sessions/${SESSION}/tabs`, () => json({ error: "At most 4 shells per machine" }, 409));
    render(<Workspace />);
    await loaded();

    fireEvent.click(screen.getByTestId("new-shell"));
    expect((await screen.findByTestId("shell-error")).textContent).toBe("At most 4 shells per machine");
    expect(screen.getByRole("alert")).toBe(screen.getByTestId("shell-error"));
    expect(tabs()).toHaveLength(2);

    routes.set(`POST /api/sessions/${SESSION}/tabs`, () => Promise.reject(new TypeError("Failed to fetch")));
    fireEvent.click(screen.getByTestId("new-shell"));
    await waitFor(() => expect(screen.getByTestId("shell-error").textContent).toBe("The shell could not be opened or closed. Try again."));
  });

  it(`offers no more than ${MAX_SHELLS_PER_MACHINE} shells per machine`, async () => {
    const extra = Array.from({ length: MAX_SHELLS_PER_MACHINE - 1 }, (_, i) => ({ machine: "node01", number: i + 2 }));
    routes.set(`POST /api/labs/${slug}/session?async=1`, sessionAnswer(extra));
    render(<Workspace initial="node01" />);
    await waitFor(() => expect(tabs()).toHaveLength(MACHINES.length + extra.length));

    const add = screen.getByTestId("new-shell");
    expect(add.hasAttribute("disabled")).toBe(true);
    expect(add.title).toBe(`At most ${MAX_SHELLS_PER_MACHINE} shells per machine`);
    fireEvent.click(tab("node01#3"));
    expect(add.hasAttribute("disabled")).toBe(true);

    // The limit is per machine: the other one still has room.
    fireEvent.click(tab("controlplane"));
    expect(add.hasAttribute("disabled")).toBe(false);
    expect(add.title).toBe("Open another shell on controlplane");
  });

  it("closes an extra shell after a confirm and goes back to its machine's first shell", async () => {
    routes.set(`POST /api/labs/${slug}/session?async=1`, sessionAnswer([{ machine: "node01", number: 2 }]));
    routes.set(`DELETE /api/sessions/${SESSION}/tabs/node01/2`, () => json({ ok: true }));
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    render(<Workspace initial="node01#2" />);
    await waitFor(() => expect(tabs()).toHaveLength(3));

    const close = screen.getByTestId("close-shell-node01#2");
    fireEvent.click(close);
    expect(confirm).toHaveBeenCalledWith("Close node01 #2? Its shell ends, along with anything still running in it.");
    expect(requests.filter((r) => r.method === "DELETE")).toEqual([]);
    expect(tabs()).toHaveLength(3);

    confirm.mockReturnValue(true);
    fireEvent.click(close);
    await waitFor(() => expect(tabs()).toHaveLength(2));
    expect(requests.filter((r) => r.method === "DELETE")).toEqual([{ method: "DELETE", url: `/api/sessions/${SESSION}/tabs/node01/2` }]);
    expect(screen.queryByTestId("close-shell-node01#2")).toBeNull();
    expect(onSelect).toHaveBeenLastCalledWith("node01");
    expect(tab("node01").getAttribute("aria-selected")).toBe("true");
  });

  it("keeps the tab and says why when the server refuses to close it", async () => {
    routes.set(`POST /api/labs/${slug}/session?async=1`, sessionAnswer([{ machine: "node01", number: 2 }]));
    routes.set(`DELETE /api/sessions/${SESSION}/tabs/node01/2`, () => json({ error: "Not yours" }, 403));
    vi.spyOn(window, "confirm").mockReturnValue(true);
    render(<Workspace initial="controlplane" />);
    await waitFor(() => expect(tabs()).toHaveLength(3));

    fireEvent.click(screen.getByTestId("close-shell-node01#2"));
    expect((await screen.findByTestId("shell-error")).textContent).toBe("Not yours");
    expect(tabs()).toHaveLength(3);
    expect(onSelect).not.toHaveBeenCalled();
  });
});
