// @vitest-environment jsdom
/**
 * The exam panel as a learner uses it: the numbered tasks with their points, opening any task
 * (the server is told), the learner's done and flag marks, the submission behind a confirm, and
 * what changes once the attempt is being scored. The attempt comes from the real useExam; fetch
 * is the far edge, answered here.
 */
import { act, cleanup, configure, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import en from "@/messages/en.json";
import type { ExamMarks, ExamTask, ExamView } from "./exam-api";
import { ExamPanel } from "./ExamPanel";
import { useExam } from "./useExam";

configure({ asyncUtilTimeout: 5_000 });

const TASKS: ExamTask[] = [
  { id: "etcd", title: "Back up etcd", machine: "controlplane", points: 7, textMarkdown: "Save a snapshot to `/opt/etcd.db`." },
  { id: "rbac", title: "A role for the deployer", machine: "controlplane", points: 4, textMarkdown: "Create **deployer**." },
  { id: "kubelet", title: "Fix node01", machine: "node01", points: 9, textMarkdown: "Make node01 Ready." },
];

function exam(over: Partial<ExamView> = {}): ExamView {
  return {
    sessionId: "s1",
    labSlug: "cka-mock",
    title: "CKA mock",
    state: "running",
    deadline: "2026-12-06T11:00:00.000Z",
    serverNow: "2026-12-06T10:00:00.000Z",
    durationMinutes: 120,
    passPercent: 66,
    tasks: TASKS,
    marks: {},
    currentTaskId: "etcd",
    submittedAt: null,
    submittedBy: null,
    ...over,
  };
}

type Route = (body: unknown) => Response | Promise<Response>;
let routes: Map<string, Route>;
let requests: { method: string; url: string; body?: unknown }[];

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
      const body: unknown = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
      requests.push(body === undefined ? { method, url } : { method, url, body });
      const route = routes.get(`${method} ${url}`);
      if (!route) throw new Error(`unexpected request: ${method} ${url}`);
      return route(body);
    }),
  );
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function Panel({ onOpenTask }: { onOpenTask?: (task: ExamTask) => void }) {
  const feed = useExam("s1");
  return <ExamPanel sessionId="s1" feed={feed} tasks={TASKS} lessonMarkdown="# The exam brief" timeUp={false} onOpenTask={onOpenTask} />;
}

function renderPanel(view: ExamView, onOpenTask?: (task: ExamTask) => void) {
  routes.set("GET /api/sessions/s1/exam", () => json(view));
  return render(
    <NextIntlClientProvider locale="en" messages={en}>
      <Panel onOpenTask={onOpenTask} />
    </NextIntlClientProvider>,
  );
}

function task(id: string): HTMLElement {
  return document.querySelector<HTMLElement>(`li[data-task-id="${id}"]`)!;
}

function shownTask(): string | undefined {
  return screen.queryByTestId("exam-task")?.dataset.taskId;
}

/** Requests other than the polls of the attempt. */
function actions() {
  return requests.filter((r) => !(r.method === "GET" && r.url === "/api/sessions/s1/exam"));
}

describe("ExamPanel", () => {
  it("lists the tasks with numbers and points and opens the server's current one, with no check, hint or solution", async () => {
    renderPanel(exam({ currentTaskId: "rbac" }));
    await waitFor(() => expect(shownTask()).toBe("rbac"));
    const items = screen.getAllByRole("listitem").filter((li) => li.dataset.taskId);
    expect(items.map((li) => within(li).getAllByRole("button")[0]!.textContent)).toEqual([
      "Task 1Back up etcd7 points",
      "Task 2A role for the deployer4 points",
      "Task 3Fix node019 points",
    ]);
    expect(task("rbac").getAttribute("aria-current")).toBe("step");
    expect(within(screen.getByTestId("exam-task")).getByText("deployer").tagName).toBe("STRONG");
    expect(screen.getByText("3 tasks, 20 points · 0 marked done")).toBeTruthy();
    expect(screen.queryByRole("button", { name: /check|hint|solution/i })).toBeNull();
    expect(actions()).toEqual([]); // the server already knows the current task
  });

  it("opens any task and tells the server, from the list and with previous and next", async () => {
    const opened: string[] = [];
    routes.set("POST /api/sessions/s1/exam/task", () => new Response(null, { status: 204 }));
    renderPanel(exam(), (t) => opened.push(t.machine));
    await waitFor(() => expect(shownTask()).toBe("etcd"));

    fireEvent.click(within(task("kubelet")).getByText("Fix node01"));
    expect(shownTask()).toBe("kubelet");
    expect(task("kubelet").getAttribute("aria-current")).toBe("step");
    expect(task("etcd").getAttribute("aria-current")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "← Previous" }));
    expect(shownTask()).toBe("rbac");
    fireEvent.click(screen.getByRole("button", { name: "← Previous" }));
    expect(shownTask()).toBe("etcd");
    expect(screen.getByRole("button", { name: "← Previous" }).hasAttribute("disabled")).toBe(true);
    fireEvent.click(screen.getByRole("button", { name: "Next →" }));
    fireEvent.click(within(task("rbac")).getByText("A role for the deployer")); // the task already open: nothing to tell

    await waitFor(() => expect(actions()).toHaveLength(4));
    expect(actions().map((r) => r.body)).toEqual([{ taskId: "kubelet" }, { taskId: "rbac" }, { taskId: "etcd" }, { taskId: "rbac" }]);
    expect(actions().every((r) => r.method === "POST" && r.url === "/api/sessions/s1/exam/task")).toBe(true);
    expect(opened).toEqual(["node01", "controlplane", "controlplane", "controlplane"]);
  });

  it("tells the server which task is open when it has none yet", async () => {
    routes.set("POST /api/sessions/s1/exam/task", () => new Response(null, { status: 204 }));
    renderPanel(exam({ currentTaskId: null }));
    await waitFor(() => expect(actions()).toEqual([{ method: "POST", url: "/api/sessions/s1/exam/task", body: { taskId: "etcd" } }]));
    expect(shownTask()).toBe("etcd");
  });

  it("toggles the learner's done and flag marks, at once and then as the server has them", async () => {
    let answer!: (response: Response) => void;
    routes.set("PUT /api/sessions/s1/exam/marks", () => new Promise<Response>((resolve) => (answer = resolve)));
    renderPanel(exam());
    await waitFor(() => expect(shownTask()).toBe("etcd"));

    const done1 = within(task("etcd")).getByRole("button", { name: "Task 1: marked done" });
    expect(done1.getAttribute("aria-pressed")).toBe("false");
    fireEvent.click(done1);
    expect(task("etcd").dataset.done).toBe("true"); // before the server answers
    expect(done1.getAttribute("aria-pressed")).toBe("true");
    await waitFor(() => expect(actions()).toHaveLength(1));
    expect(actions()[0]).toEqual({ method: "PUT", url: "/api/sessions/s1/exam/marks", body: { taskId: "etcd", done: true } });
    const marks: ExamMarks = { etcd: { done: true, flagged: false }, kubelet: { done: false, flagged: true } };
    await act(async () => answer(json({ marks })));
    expect(task("kubelet").dataset.flagged).toBe("true"); // the server's marks replace the page's
    expect(screen.getByText("3 tasks, 20 points · 1 marked done · 1 flagged")).toBeTruthy();

    routes.set("PUT /api/sessions/s1/exam/marks", () => json({ marks: { ...marks, rbac: { done: false, flagged: true } } }));
    fireEvent.click(within(task("rbac")).getByRole("button", { name: "Task 2: flagged for review" }));
    await waitFor(() => expect(actions()).toHaveLength(2));
    expect(actions()[1]!.body).toEqual({ taskId: "rbac", flagged: true });
    expect(task("rbac").dataset.flagged).toBe("true");
    expect(shownTask()).toBe("etcd"); // a mark does not open the task
  });

  it("asks before submitting, then submits and shows the scoring", async () => {
    routes.set("POST /api/sessions/s1/exam/submit", () => {
      routes.set("GET /api/sessions/s1/exam", () =>
        json(exam({ state: "scoring", submittedBy: "learner", submittedAt: "2026-12-06T10:30:00.000Z" })),
      );
      return json({ state: "scoring" }, 202);
    });
    renderPanel(exam({ marks: { etcd: { done: true, flagged: false }, rbac: { done: false, flagged: true } } }));
    await waitFor(() => expect(shownTask()).toBe("etcd"));

    fireEvent.click(screen.getByTestId("exam-submit"));
    const dialog = screen.getByRole("dialog", { name: "Submit the exam?" });
    expect(dialog.textContent).toContain("Marked done: 1 of 3 · flagged for review: 1");
    fireEvent.click(within(dialog).getByRole("button", { name: "Back to the exam" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(actions()).toEqual([]);

    fireEvent.click(screen.getByTestId("exam-submit"));
    fireEvent.click(screen.getByTestId("submit-confirm"));
    await waitFor(() => expect(screen.getByTestId("exam-status").dataset.state).toBe("scoring"));
    expect(actions()).toEqual([{ method: "POST", url: "/api/sessions/s1/exam/submit" }]);
    expect(screen.getByTestId("exam-status").textContent).toContain("Scoring…");
    expect(screen.getByTestId("exam-submit").hasAttribute("disabled")).toBe(true);
    expect(within(task("etcd")).getByRole("button", { name: "Task 1: marked done" }).hasAttribute("disabled")).toBe(true);
  });

  it("shows a refused mark's reason and the new state (the time ran out), and tells no more task switches", async () => {
    routes.set("PUT /api/sessions/s1/exam/marks", () => {
      routes.set("GET /api/sessions/s1/exam", () =>
        json(exam({ state: "scoring", submittedBy: "time", submittedAt: "2026-12-06T11:00:00.000Z" })),
      );
      return json({ error: "The exam is over.", state: "scoring" }, 409);
    });
    renderPanel(exam());
    await waitFor(() => expect(shownTask()).toBe("etcd"));
    fireEvent.click(within(task("rbac")).getByRole("button", { name: "Task 2: marked done" }));
    await waitFor(() => expect(screen.getByTestId("exam-status").dataset.state).toBe("scoring"));
    expect(screen.getByRole("alert").textContent).toBe("Could not save the mark: The exam is over.");
    expect(screen.getByTestId("exam-status").textContent).toContain("Time is up: your answers were submitted automatically.");
    expect(task("rbac").dataset.done).toBe("false"); // back to the server's marks

    fireEvent.click(within(task("kubelet")).getByText("Fix node01"));
    expect(shownTask()).toBe("kubelet"); // still readable
    expect(actions().map((r) => `${r.method} ${r.url}`)).toEqual(["PUT /api/sessions/s1/exam/marks"]);
  });

  it("links to the result once scored, and hides the tasks' text while the machines start", async () => {
    renderPanel(exam({ state: "scored", submittedBy: "learner", submittedAt: "2026-12-06T10:30:00.000Z" }));
    const link = await screen.findByTestId("exam-result-link");
    expect(link.getAttribute("href")).toBe("/exams/result/s1");
    cleanup();

    renderPanel(exam({ state: "starting", deadline: null, currentTaskId: null }));
    await waitFor(() => expect(screen.getByTestId("exam-status").dataset.state).toBe("starting"));
    expect(shownTask()).toBeUndefined();
    expect(screen.queryByText("Make node01 Ready.")).toBeNull();
    expect(screen.getByTestId("exam-brief").dataset.open).toBe("true");
    expect(actions()).toEqual([]);
  });
});
