// @vitest-environment jsdom
/**
 * A cohort's exam results as an instructor reads them: sorting by the total and by a task's points
 * (both directions, aria-sort on the header), "—" for a learner who has not started, the link to a
 * scored learner's result page, the CSV link and the summary line; in Japanese, the state names.
 */
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { afterEach, describe, expect, it } from "vitest";
import en from "@/messages/en.json";
import ja from "@/messages/ja.json";
import type { CohortExamResults } from "@/server/exams/cohort-results";
import { DATE_TIME_FORMATS } from "@/server/i18n/time-zone";
import { ExamResultsTable } from "./ExamResultsTable";

type Row = CohortExamResults["rows"][number];

function row(over: Partial<Row> & Pick<Row, "learnerId" | "name">): Row {
  return {
    email: `${over.learnerId}@example.com`,
    sessionId: null,
    state: "notStarted",
    score: null,
    maxScore: null,
    passed: null,
    submittedAt: null,
    submittedBy: null,
    tasks: {},
    ...over,
  };
}

const RESULTS: CohortExamResults = {
  slug: "cka-mock",
  title: "CKA mock exam",
  passPercent: 66,
  tasks: [
    { id: "etcd", title: "Back up etcd", maxPoints: 7 },
    { id: "rbac", title: "A role", maxPoints: 5 },
  ],
  rows: [
    // The server's order: by name.
    row({
      learnerId: "aiko",
      name: "Aiko",
      sessionId: "s-aiko",
      state: "scored",
      score: 5,
      maxScore: 12,
      passed: false,
      submittedAt: "2026-12-06T01:30:00.000Z",
      submittedBy: "time",
      tasks: { etcd: { points: 0, timeMs: 754_000 }, rbac: { points: 5, timeMs: 30_000 } },
    }),
    row({
      learnerId: "ben",
      name: "Ben",
      sessionId: "s-ben",
      state: "scored",
      score: 11,
      maxScore: 12,
      passed: true,
      submittedAt: "2026-12-06T01:10:00.000Z",
      submittedBy: "learner",
      tasks: { etcd: { points: 7, timeMs: 600_000 }, rbac: { points: 4, timeMs: 120_000 } },
    }),
    row({ learnerId: "chie", name: "Chie" }),
    row({
      learnerId: "daiki",
      name: "Daiki",
      sessionId: "s-daiki",
      state: "running",
      tasks: { etcd: { points: null, timeMs: 90_000 }, rbac: { points: null, timeMs: 0 } },
    }),
    row({
      learnerId: "emi",
      name: "Emi",
      sessionId: "s-emi",
      state: "scored",
      score: 8,
      maxScore: 12,
      passed: true,
      submittedAt: "2026-12-06T01:20:00.000Z",
      submittedBy: "learner",
      tasks: { etcd: { points: 5, timeMs: 300_000 }, rbac: { points: 3, timeMs: 60_000 } },
    }),
  ],
};

function renderTable(locale: "en" | "ja" = "en", results: CohortExamResults = RESULTS) {
  return render(
    <NextIntlClientProvider locale={locale} messages={locale === "en" ? en : ja} timeZone="Asia/Tokyo" formats={DATE_TIME_FORMATS}>
      <ExamResultsTable cohortId="c1" results={results} />
    </NextIntlClientProvider>,
  );
}

/** The learners' names, top to bottom. */
function order(): string[] {
  return screen
    .getAllByRole("row")
    .slice(1)
    .map((r) => r.getAttribute("data-learner")!.replace("@example.com", ""));
}

function header(key: string): HTMLElement {
  return document.querySelector<HTMLElement>(`th[data-sort-key="${key}"]`)!;
}

function learnerRow(id: string): HTMLElement {
  return document.querySelector<HTMLElement>(`tr[data-learner="${id}@example.com"]`)!;
}

afterEach(cleanup);

describe("ExamResultsTable", () => {
  it("starts in name order with aria-sort on the name column only", () => {
    renderTable();
    expect(order()).toEqual(["aiko", "ben", "chie", "daiki", "emi"]);
    expect(header("name").getAttribute("aria-sort")).toBe("ascending");
    expect(header("total").getAttribute("aria-sort")).toBe("none");
  });

  it("sorts by the total, highest first, then lowest first; learners without a total stay last", () => {
    renderTable();
    fireEvent.click(within(header("total")).getByRole("button"));
    expect(order()).toEqual(["ben", "emi", "aiko", "chie", "daiki"]);
    expect(header("total").getAttribute("aria-sort")).toBe("descending");
    expect(header("name").getAttribute("aria-sort")).toBe("none");

    fireEvent.click(within(header("total")).getByRole("button"));
    expect(order()).toEqual(["aiko", "emi", "ben", "chie", "daiki"]);
    expect(header("total").getAttribute("aria-sort")).toBe("ascending");
  });

  it("sorts by a task's points in both directions", () => {
    renderTable();
    const etcd = header("task:etcd");
    expect(etcd.textContent).toContain("Back up etcd");
    expect(etcd.textContent).toContain("7 pts");
    fireEvent.click(within(etcd).getByRole("button"));
    expect(order()).toEqual(["ben", "emi", "aiko", "chie", "daiki"]);
    expect(etcd.getAttribute("aria-sort")).toBe("descending");

    fireEvent.click(within(etcd).getByRole("button"));
    expect(order()).toEqual(["aiko", "emi", "ben", "chie", "daiki"]);
    expect(etcd.getAttribute("aria-sort")).toBe("ascending");

    // Another task orders differently: Aiko has every point of the role task.
    fireEvent.click(within(header("task:rbac")).getByRole("button"));
    expect(order()).toEqual(["aiko", "ben", "emi", "chie", "daiki"]);
    expect(etcd.getAttribute("aria-sort")).toBe("none");
    expect(header("task:rbac").getAttribute("aria-sort")).toBe("descending");
  });

  it("sorts by name backwards and by the time handed in", () => {
    renderTable();
    fireEvent.click(within(header("name")).getByRole("button"));
    expect(order()).toEqual(["emi", "daiki", "chie", "ben", "aiko"]);
    expect(header("name").getAttribute("aria-sort")).toBe("descending");
    fireEvent.click(within(header("submittedAt")).getByRole("button"));
    expect(order()).toEqual(["ben", "emi", "aiko", "chie", "daiki"]);
    expect(header("submittedAt").getAttribute("aria-sort")).toBe("ascending");
  });

  it("shows — for a learner who has not started, and no link", () => {
    renderTable();
    const chie = learnerRow("chie");
    expect(chie.dataset.state).toBe("notStarted");
    expect(
      within(chie)
        .getAllByTestId("task-points")
        .map((c) => c.textContent),
    ).toEqual(["—", "—"]);
    expect(within(chie).getByTestId("exam-total").textContent).toBe("—");
    expect(within(chie).queryByTestId("task-time")).toBeNull();
    expect(within(chie).queryByRole("link")).toBeNull();
    expect(within(chie).getByTestId("exam-state").textContent).toBe("Not started");
  });

  it("shows points, time per task, the total and the badge of a scored learner, whose name links to the result", () => {
    renderTable();
    const aiko = learnerRow("aiko");
    expect(
      within(aiko)
        .getAllByTestId("task-points")
        .map((c) => c.textContent),
    ).toEqual(["0", "5"]);
    expect(
      within(aiko)
        .getAllByTestId("task-time")
        .map((c) => c.textContent),
    ).toEqual(["12 min 34 s", "30 s"]);
    expect(within(aiko).getByTestId("exam-total").textContent).toBe("5 / 12");
    expect(within(aiko).getByTestId("exam-passed").textContent).toBe("Not passed");
    expect(within(learnerRow("ben")).getByTestId("exam-passed").textContent).toBe("Passed");
    expect(within(aiko).getByRole("link", { name: "Aiko" }).getAttribute("href")).toBe("/exams/result/s-aiko");
  });

  it("does not link a learner whose sitting is still running; their points are — but their time shows", () => {
    renderTable();
    const daiki = learnerRow("daiki");
    expect(within(daiki).queryByRole("link")).toBeNull();
    expect(
      within(daiki)
        .getAllByTestId("task-points")
        .map((c) => c.textContent),
    ).toEqual(["—", "—"]);
    expect(
      within(daiki)
        .getAllByTestId("task-time")
        .map((c) => c.textContent),
    ).toEqual(["1 min 30 s"]);
    expect(within(daiki).getByTestId("exam-state").textContent).toBe("In progress");
  });

  it("links the CSV download of the results API", () => {
    renderTable();
    const csv = screen.getByRole("link", { name: "Download CSV" });
    expect(csv.getAttribute("href")).toBe("/api/cohorts/c1/exams/cka-mock/results?format=csv");
    expect(csv.hasAttribute("download")).toBe(true);
  });

  it("sums up: sat, passed, average of the scored totals, pass mark", () => {
    renderTable();
    // Sat: Aiko, Ben, Daiki, Emi; passed: Ben, Emi; average of 5, 11 and 8.
    expect(screen.getByTestId("exam-results-summary").textContent).toBe("4 of 5 sat ・ 2 passed ・ average 8 / 12 points ・ pass mark 66%");
  });

  it("speaks Japanese", () => {
    renderTable("ja");
    expect(screen.getByRole("link", { name: "CSV をダウンロード" })).toBeTruthy();
    expect(within(learnerRow("chie")).getByTestId("exam-state").textContent).toBe("未受験");
    expect(within(learnerRow("daiki")).getByTestId("exam-state").textContent).toBe("受験中");
    expect(within(learnerRow("aiko")).getByTestId("exam-state").textContent).toBe("採点済み");
    expect(within(learnerRow("aiko")).getByTestId("exam-passed").textContent).toBe("不合格");
    expect(screen.getByTestId("exam-results-summary").textContent).toBe("受験 4 / 5 人 ・ 合格 2 人 ・ 平均 8 / 12 点 ・ 合格ライン 66%");
  });

  it("says so when the cohort has no learners, and has no average yet", () => {
    renderTable("en", { ...RESULTS, rows: [] });
    expect(screen.queryByRole("table")).toBeNull();
    expect(screen.getByText("No learners in this cohort yet.")).toBeTruthy();
    expect(screen.getByTestId("exam-results-summary").textContent).toContain("no average yet");
  });
});
