// @vitest-environment jsdom
/**
 * The step panel as a learner uses it: the steps with their states, the Check button against the
 * grader API (fetch is the far edge, answered here), hints, the reboot proof and a finished lab.
 */
import { act, cleanup, configure, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { useState } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import en from "@/messages/en.json";
import type { CheckResult, Progress, StepState } from "@/server/grader/progress";
import { StepPanel, type StepText } from "./StepPanel";
import type { ProgressFeed } from "./useProgress";

// findBy and waitFor wait up to 5 s rather than 1 s: test machines are small and shared, and a jsdom render can take a while there.
configure({ asyncUtilTimeout: 5_000 });

const STEPS: StepText[] = [
  { id: "swap", title: "Turn swap off", machine: "node01", textMarkdown: "Run `swapoff -a`." },
  { id: "fstab", title: "Keep it off", machine: "node01", textMarkdown: "Edit **fstab**." },
  { id: "kubelet", title: "Start kubelet", machine: "controlplane", textMarkdown: "Start the kubelet." },
];

function progress(states: StepState[], over: Partial<Progress> = {}): Progress {
  const current = STEPS.find((_, i) => states[i] === "current" || states[i] === "proving");
  return {
    sessionId: "s1",
    labVersion: "v1",
    steps: STEPS.map((s, i) => ({ id: s.id, title: s.title, state: states[i]! })),
    currentStepId: current?.id ?? null,
    lastCheck: null,
    rebootProof: null,
    hintsRevealed: [],
    completed: states.every((s) => s === "done"),
    ...over,
  };
}

function checkResult(over: Partial<CheckResult>): CheckResult {
  return { stepId: "fstab", outcome: "fail", trigger: "manual", output: "", at: "2026-12-05T09:00:00.000Z", durationMs: 40, ...over };
}

/** What StepPanel's caller (LabGuide, through useProgress) gives it: the shown progress, and apply. */
function Panel(props: { initial: Progress | undefined; sessionId?: string; error?: string; sessionError?: string }) {
  const [shown, setShown] = useState(props.initial);
  const feed: ProgressFeed = { progress: shown, status: "live", error: props.error, apply: setShown };
  return (
    <NextIntlClientProvider locale="en" messages={en}>
      <StepPanel sessionId={"sessionId" in props ? props.sessionId : "s1"} steps={STEPS} feed={feed} sessionError={props.sessionError} />
    </NextIntlClientProvider>
  );
}

type Route = (init: RequestInit | undefined) => Response | Promise<Response>;
let routes: Map<string, Route>;
let requests: { method: string; url: string }[];

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

beforeEach(() => {
  routes = new Map();
  requests = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      const method = init?.method ?? "GET";
      requests.push({ method, url });
      const route = routes.get(`${method} ${url}`);
      if (!route) throw new Error(`unexpected request: ${method} ${url}`);
      return route(init);
    }),
  );
  // jsdom lays nothing out and has neither CSS.escape nor Element.scrollTo (used to bring a new current step into view).
  vi.stubGlobal("CSS", { escape: (value: string) => value.replace(/["\\]/g, "\\$&") });
  Element.prototype.scrollTo = vi.fn();
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function step(id: string): HTMLElement {
  return document.querySelector<HTMLElement>(`li[data-step-id="${id}"]`)!;
}

describe("StepPanel", () => {
  it("shows each step in its state, the current one open and a done one folded", () => {
    render(<Panel initial={progress(["done", "current", "locked"])} />);

    expect(STEPS.map((s) => step(s.id).dataset.state)).toEqual(["done", "current", "locked"]);
    expect(screen.getByText("1/3 done")).toBeTruthy();
    expect(step("fstab").getAttribute("aria-current")).toBe("step");
    expect(within(step("fstab")).getByText("fstab").tagName).toBe("STRONG"); // its Markdown, rendered
    expect(within(step("kubelet")).queryByText("Start the kubelet.")).toBeNull(); // locked: title only
    expect(within(step("swap")).queryByText("swapoff -a")).toBeNull(); // done: folded

    const toggle = within(step("swap")).getByRole("button", { name: /Turn swap off/ });
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    fireEvent.click(toggle);
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    expect(within(step("swap")).getByText("swapoff -a")).toBeTruthy();

    const goTo = screen.getByTitle("Show this step");
    expect(goTo.textContent).toBe("Step 2: Keep it offChecked on node01");
  });

  it("runs the check on the API and shows its result, then the next step once it passes", async () => {
    let answer!: (response: Response) => void;
    routes.set("POST /api/sessions/s1/check", () => new Promise<Response>((resolve) => (answer = resolve)));
    render(<Panel initial={progress(["done", "current", "locked"])} />);

    const button = screen.getByTestId("check-button");
    fireEvent.click(button);
    await waitFor(() => expect(button.getAttribute("aria-busy")).toBe("true"));
    expect(button.textContent).toBe("Checking…");
    expect(button.hasAttribute("disabled")).toBe(true);
    expect(requests).toEqual([{ method: "POST", url: "/api/sessions/s1/check" }]);

    await act(async () =>
      answer(json({ progress: progress(["done", "current", "locked"], { lastCheck: checkResult({ output: "swap is still in fstab" }) }) })),
    );
    const feedback = await screen.findByTestId("check-feedback");
    expect(feedback.dataset.outcome).toBe("fail");
    expect(feedback.dataset.stepId).toBe("fstab");
    expect(feedback.textContent).toBe("Not yetKeep it offswap is still in fstab");
    expect(button.getAttribute("aria-busy")).toBe("false");
    expect(button.textContent).toBe("Check");

    routes.set("POST /api/sessions/s1/check", () =>
      json({ progress: progress(["done", "done", "current"], { lastCheck: checkResult({ outcome: "pass", output: "" }) }) }),
    );
    fireEvent.click(button);
    await waitFor(() => expect(step("fstab").dataset.state).toBe("done"));
    expect(step("kubelet").dataset.state).toBe("current");
    expect(screen.getByTestId("check-feedback").dataset.outcome).toBe("pass");
    expect(screen.getByText("2/3 done")).toBeTruthy();
    // The new current step is brought into view (by an effect, which may run after the DOM shows the step done).
    await waitFor(() => expect(Element.prototype.scrollTo).toHaveBeenCalledWith({ top: 0, behavior: "smooth" }));
  });

  it("says why a check could not run: the server's refusal, or no answer", async () => {
    routes.set("POST /api/sessions/s1/check", () => json({ error: "The machine is still starting" }, 409));
    render(<Panel initial={progress(["current", "locked", "locked"])} />);

    fireEvent.click(screen.getByTestId("check-button"));
    expect(await screen.findByText("The check could not be run: The machine is still starting")).toBeTruthy();

    routes.set("POST /api/sessions/s1/check", () => Promise.reject(new TypeError("Failed to fetch")));
    fireEvent.click(screen.getByTestId("check-button"));
    expect(await screen.findByText("The check could not be run: Cannot reach the server")).toBeTruthy();
    expect(screen.queryByTestId("check-feedback")).toBeNull();
  });

  it("reveals the current step's hint on request, and a hint revealed before without one", async () => {
    routes.set("POST /api/sessions/s1/hints/fstab", () => json({ hint: "Look for a line with **swap**." }));
    routes.set("POST /api/sessions/s1/hints/swap", () => json({ hint: "`swapoff` turns it off now." }));
    render(<Panel initial={progress(["done", "current", "locked"], { hintsRevealed: ["swap"] })} />);

    expect(within(step("kubelet")).queryByRole("button", { name: "Show hint" })).toBeNull();
    fireEvent.click(within(step("fstab")).getByRole("button", { name: "Show hint" }));
    const hint = await within(step("fstab")).findByTestId("hint");
    expect(hint.dataset.stepId).toBe("fstab");
    expect(hint.textContent).toBe("HintLook for a line with swap.");
    expect(within(step("fstab")).queryByRole("button", { name: "Show hint" })).toBeNull();

    // Revealed before (a reload): once the done step is unfolded, its hint is fetched and shown without a click.
    expect(requests.map((r) => r.url)).not.toContain("/api/sessions/s1/hints/swap");
    fireEvent.click(within(step("swap")).getByRole("button", { name: /Turn swap off/ }));
    expect((await within(step("swap")).findByTestId("hint")).textContent).toBe("Hintswapoff turns it off now.");
    expect(within(step("swap")).queryByRole("button", { name: "Show hint" })).toBeNull();
  });

  it("offers a retry when a hint could not be loaded", async () => {
    routes.set("POST /api/sessions/s1/hints/swap", () => json({ error: "no" }, 500));
    render(<Panel initial={progress(["current", "locked", "locked"])} />);

    fireEvent.click(screen.getByRole("button", { name: "Show hint" }));
    expect(await screen.findByText("The hint could not be loaded")).toBeTruthy();
    let answer!: (response: Response) => void;
    routes.set("POST /api/sessions/s1/hints/swap", () => new Promise<Response>((resolve) => (answer = resolve)));
    fireEvent.click(screen.getByRole("button", { name: "Retry" }));
    expect(await screen.findByText("Loading hint…")).toBeTruthy();
    expect(screen.queryByText("The hint could not be loaded")).toBeNull();
    await act(async () => answer(json({ hint: "Try `free -h`." })));
    expect((await screen.findByTestId("hint")).textContent).toBe("HintTry free -h.");
  });

  it("asks for a reboot of a proving step's machine", async () => {
    routes.set("POST /api/sessions/s1/machines/node01/reboot", () => json({}));
    const proving = progress(["done", "proving", "locked"], {
      rebootProof: { stepId: "fstab", machine: "node01", passedAt: "2026-12-05T09:00:00.000Z" },
      lastCheck: checkResult({ outcome: "pass", output: "swap is off" }),
    });
    render(<Panel initial={proving} />);

    expect(step("fstab").dataset.state).toBe("proving");
    expect(step("fstab").getAttribute("aria-current")).toBe("step");
    expect(within(step("fstab")).getByText("fstab").tagName).toBe("STRONG"); // open, as the current step is
    expect(within(step("fstab")).getByRole("button", { name: "Show hint" })).toBeTruthy();
    const notice = screen.getByTestId("reboot-proof");
    expect(notice.dataset.machine).toBe("node01");
    fireEvent.click(within(notice).getByTestId("reboot-and-verify"));
    expect(await within(notice).findByText("Rebooting node01… the check runs again by itself when it is back")).toBeTruthy();
    expect(requests).toEqual([{ method: "POST", url: "/api/sessions/s1/machines/node01/reboot" }]);
    expect(within(notice).getByTestId("reboot-and-verify").hasAttribute("disabled")).toBe(true);
  });

  it("shows a finished lab: the banner, every step done, no Check button", () => {
    render(<Panel initial={progress(["done", "done", "done"], { lastCheck: checkResult({ stepId: "kubelet", outcome: "pass" }) })} />);

    expect(screen.getByTestId("lab-complete").textContent).toBe("All steps done!Well done. The terminals stay available.");
    expect(STEPS.map((s) => step(s.id).dataset.state)).toEqual(["done", "done", "done"]);
    expect(screen.getByText("3/3 done")).toBeTruthy();
    expect(screen.queryByTestId("check-button")).toBeNull();
    expect(screen.getByTestId("check-feedback").dataset.outcome).toBe("pass");
  });

  it("says the progress is loading, or why it could not be loaded", () => {
    const { unmount } = render(<Panel initial={undefined} sessionId={undefined} />);
    expect(screen.getByRole("status").textContent).toBe("Loading progress…");
    expect(STEPS.map((s) => step(s.id).dataset.state)).toEqual([undefined, undefined, undefined]);
    unmount();

    render(<Panel initial={undefined} error="Cannot reach the server" />);
    expect(screen.getByRole("status").textContent).toBe("Progress could not be loaded: Cannot reach the server");
  });
});
