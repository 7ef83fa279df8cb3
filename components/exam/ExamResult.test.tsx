// @vitest-environment jsdom
/**
 * The exam's result as the learner reads it: the total against the pass mark, each task's points
 * and time, a failed check with its output, a reboot task whose check failed on the new boot, the
 * solution and the recording at the task; and the wait while the attempt is still being scored
 * (fetch is the far edge, answered here).
 */
import { act, cleanup, render, screen, within } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import en from "@/messages/en.json";
import ja from "@/messages/ja.json";
import { DATE_TIME_FORMATS } from "@/server/i18n/time-zone";
import type { ExamResult as Result } from "./exam-api";
import { ExamResult } from "./ExamResult";
import { ExamResultView } from "./ExamResultView";

const RESULT: Result = {
  state: "scored",
  score: 9,
  maxScore: 20,
  percent: 45,
  passPercent: 66,
  passed: false,
  submittedAt: "2026-12-06T01:30:00.000Z",
  submittedBy: "time",
  scoredAt: "2026-12-06T01:31:10.000Z",
  tasks: [
    {
      id: "etcd",
      title: "Back up etcd",
      machine: "controlplane",
      points: 4,
      maxPoints: 7,
      requiresReboot: false,
      timeMs: 754_000,
      solution: "ETCDCTL_API=3 etcdctl snapshot save /opt/etcd.db",
      checks: [
        {
          id: "file",
          title: "The snapshot exists",
          points: 4,
          maxPoints: 4,
          now: { outcome: "pass", output: "found it", durationMs: 30 },
          afterReboot: null,
        },
        {
          id: "valid",
          title: "The snapshot is valid",
          points: 0,
          maxPoints: 3,
          now: { outcome: "fail", output: "snapshot status: bad magic", durationMs: 40 },
          afterReboot: null,
        },
      ],
    },
    {
      id: "swap",
      title: "Swap off for good",
      machine: "node01",
      points: 0,
      maxPoints: 9,
      requiresReboot: true,
      timeMs: 65_000,
      solution: "swapoff -a\nsed -i '/ swap / s/^/#/' /etc/fstab",
      checks: [
        {
          id: "check",
          title: "No swap",
          points: 0,
          maxPoints: 9,
          now: { outcome: "pass", output: "", durationMs: 20 },
          afterReboot: { outcome: "fail", output: "swap is back: /swap.img", durationMs: 25 },
        },
      ],
    },
    {
      id: "rbac",
      title: "A role",
      machine: "controlplane",
      points: 5,
      maxPoints: 5,
      requiresReboot: false,
      timeMs: 30_000,
      solution: "kubectl create role …",
      checks: [
        {
          id: "check",
          title: "The role",
          points: 5,
          maxPoints: 5,
          now: { outcome: "pass", output: "", durationMs: 10 },
          afterReboot: null,
        },
      ],
    },
  ],
};

function withIntl(node: React.ReactNode, locale: "en" | "ja" = "en") {
  return (
    <NextIntlClientProvider locale={locale} messages={locale === "en" ? en : ja} timeZone="Asia/Tokyo" formats={DATE_TIME_FORMATS}>
      {node}
    </NextIntlClientProvider>
  );
}

function taskItem(id: string): HTMLElement {
  return document.querySelector<HTMLElement>(`li[data-task-id="${id}"]`)!;
}

function checkItem(taskId: string, checkId: string): HTMLElement {
  return taskItem(taskId).querySelector<HTMLElement>(`li[data-check-id="${checkId}"]`)!;
}

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("ExamResultView", () => {
  it("shows the total against the pass mark and each task's points and time", () => {
    render(withIntl(<ExamResultView sessionId="s1" result={RESULT} />));
    const summary = screen.getByTestId("exam-summary");
    expect(summary.dataset.passed).toBe("false");
    expect(summary.textContent).toContain("Not passed");
    expect(summary.textContent).toContain("9 of 20 points (45%)");
    expect(summary.textContent).toContain("Pass mark: 66%");
    expect(summary.textContent).toContain("Submitted automatically when time ran out, at 12/06/2026, 10:30");
    expect(within(taskItem("etcd")).getByText("4 / 7 points")).toBeTruthy();
    expect(within(taskItem("etcd")).getByText("controlplane · time spent 12 min 34 s")).toBeTruthy();
  });

  it("shows a failed check with its output, and no output for a passed one", () => {
    render(withIntl(<ExamResultView sessionId="s1" result={RESULT} />));
    const valid = checkItem("etcd", "valid");
    expect(valid.dataset.outcome).toBe("fail");
    expect(within(valid).getByText("0 / 3 points")).toBeTruthy();
    expect(within(valid).getByText("Failed")).toBeTruthy();
    expect(within(valid).getByText("snapshot status: bad magic").tagName).toBe("PRE");
    const file = checkItem("etcd", "file");
    expect(file.dataset.outcome).toBe("pass");
    expect(within(file).queryByText("found it")).toBeNull();
    expect(within(taskItem("etcd")).queryByText(/After the reboot/)).toBeNull(); // no reboot for this task
    expect(within(taskItem("etcd")).getByText("ETCDCTL_API=3 etcdctl snapshot save /opt/etcd.db").tagName).toBe("CODE");
    expect(within(taskItem("etcd")).getByTestId("task-replay").getAttribute("href")).toBe(
      "/replay/s1?machine=controlplane&marker=task%3Aetcd",
    );
  });

  it("shows a reboot task's check that passed at submission and failed on the new boot", () => {
    render(withIntl(<ExamResultView sessionId="s1" result={RESULT} />));
    const swap = taskItem("swap");
    expect(within(swap).getByText("Also checked after a reboot")).toBeTruthy();
    const check = checkItem("swap", "check");
    expect(check.dataset.outcome).toBe("pass");
    expect(check.dataset.afterReboot).toBe("fail");
    const verdicts = [...check.querySelectorAll("div > p")].map((p) => p.textContent);
    expect(verdicts).toEqual(["At submission:Passed", "After the reboot:Failed"]);
    expect(within(check).getByText("swap is back: /swap.img").tagName).toBe("PRE");
    expect(within(check).getByText("0 / 9 points")).toBeTruthy();
    expect(swap.dataset.points).toBe("0"); // a pass that did not survive the reboot scores nothing
    expect(within(swap).getByTestId("task-replay").getAttribute("href")).toBe("/replay/s1?machine=node01&marker=task%3Aswap");
  });

  it("reads in Japanese", () => {
    render(withIntl(<ExamResultView sessionId="s1" result={{ ...RESULT, passed: true, score: 14, percent: 70 }} />, "ja"));
    expect(screen.getByTestId("exam-summary").textContent).toContain("合格");
    expect(screen.getByTestId("exam-summary").textContent).toContain("14 / 20点");
    expect(within(checkItem("swap", "check")).getByText("再起動後：")).toBeTruthy();
    expect(within(taskItem("etcd")).getByText("controlplane ・ 取り組んだ時間 12分34秒")).toBeTruthy();
  });
});

describe("ExamResult", () => {
  let answers: Response[];
  beforeEach(() => {
    answers = [];
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    vi.stubGlobal(
      "fetch",
      vi.fn(async (input: RequestInfo | URL) => {
        if (String(input) !== "/api/sessions/s1/exam/result") throw new Error(`unexpected request: ${String(input)}`);
        const next = answers.shift();
        if (!next) throw new Error("no answer left");
        return next;
      }),
    );
  });

  function json(body: unknown, status: number): Response {
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  }

  it("waits while the attempt is scored, then shows the result", async () => {
    answers.push(json({ error: "Still scoring.", state: "scoring" }, 409), json(RESULT, 200));
    render(withIntl(<ExamResult sessionId="s1" />));
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByTestId("exam-result").dataset.phase).toBe("scoring");
    expect(screen.getByTestId("exam-result").textContent).toBe("Scoring… The result appears here when it is done.");
    await act(() => vi.advanceTimersByTimeAsync(3_000));
    expect(screen.getByTestId("exam-result").dataset.phase).toBe("scored");
    expect(screen.getByTestId("exam-summary").dataset.passed).toBe("false");
  });

  it("says so for an attempt it may not see, and does not ask again", async () => {
    answers.push(json({ error: "No such session." }, 404));
    render(withIntl(<ExamResult sessionId="s1" />));
    await act(() => vi.advanceTimersByTimeAsync(10_000));
    expect(screen.getByTestId("exam-result").dataset.phase).toBe("missing");
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});
