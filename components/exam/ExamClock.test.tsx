// @vitest-environment jsdom
/**
 * The exam's countdown as the page runs it: the attempt from the exam API (fetch is the far edge,
 * answered here with a server clock 10 minutes ahead of the page's), the clock in the header
 * and the banner at 30, 15 and 5 minutes left, each once, on the server's clock.
 */
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { NextIntlClientProvider } from "next-intl";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import en from "@/messages/en.json";
import { ExamAlert, ExamClock, useExamClock } from "./ExamClock";
import type { ExamView } from "./exam-api";
import { useExam } from "./useExam";

const MIN = 60_000;
/** The page's clock at the start of each test. */
const PAGE_START = Date.parse("2026-12-06T10:00:00Z");
/** How far the server's clock is ahead of the page's. */
const SERVER_AHEAD_MS = 10 * MIN;
/** The deadline: 40 minutes after the server's now at the start (50 on the page's uncorrected clock). */
const DEADLINE = new Date(PAGE_START + SERVER_AHEAD_MS + 40 * MIN).toISOString();

let state: ExamView["state"];
let gets: number;

function examNow(): ExamView {
  return {
    sessionId: "s1",
    labSlug: "cka-mock",
    title: "CKA mock",
    state,
    deadline: state === "starting" ? null : DEADLINE,
    serverNow: new Date(Date.now() + SERVER_AHEAD_MS).toISOString(),
    durationMinutes: 40,
    passPercent: 66,
    tasks: [],
    marks: {},
    currentTaskId: null,
    submittedAt: null,
    submittedBy: null,
  };
}

function Header() {
  const feed = useExam("s1");
  const clock = useExamClock(feed);
  return (
    <>
      <ExamClock leftMs={clock.leftMs} />
      <ExamAlert alert={clock.alert} onDismiss={clock.dismiss} />
    </>
  );
}

async function advance(ms: number) {
  await act(() => vi.advanceTimersByTimeAsync(ms));
}

function clock(): string {
  return screen.getByTestId("exam-clock").textContent ?? "";
}

function alertShown(): string | null {
  return screen.queryByTestId("exam-alert")?.dataset.minutes ?? null;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"], now: PAGE_START });
  state = "running";
  gets = 0;
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL) => {
      if (String(input) !== "/api/sessions/s1/exam") throw new Error(`unexpected request: ${String(input)}`);
      gets++;
      return new Response(JSON.stringify(examNow()), { status: 200, headers: { "content-type": "application/json" } });
    }),
  );
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

function renderHeader() {
  return render(
    <NextIntlClientProvider locale="en" messages={en}>
      <Header />
    </NextIntlClientProvider>,
  );
}

describe("ExamClock", () => {
  it("counts down on the server's clock and alerts at 30, 15 and 5 minutes left, each once", async () => {
    renderHeader();
    await advance(0);
    expect(clock()).toBe("40:00"); // not 50:00: the page's clock is 10 minutes behind the server's
    expect(alertShown()).toBeNull();

    await advance(10 * MIN - 1_000);
    expect(clock()).toBe("30:01");
    expect(alertShown()).toBeNull();
    await advance(1_000);
    expect(clock()).toBe("30:00");
    expect(alertShown()).toBe("30");
    expect(screen.getByTestId("exam-alert").textContent).toContain("Less than 30 minutes left.");
    expect(screen.getByTestId("exam-alert").parentElement!.getAttribute("aria-live")).toBe("assertive");

    fireEvent.click(screen.getByRole("button", { name: "Dismiss" }));
    expect(alertShown()).toBeNull();
    await advance(15 * MIN - 1_000); // 15:01 left: the 30-minute alert does not come back
    expect(alertShown()).toBeNull();
    await advance(1_000);
    expect(alertShown()).toBe("15");

    fireEvent.click(screen.getByRole("button", { name: "Dismiss" }));
    await advance(10 * MIN - 1_000);
    expect(clock()).toBe("5:01");
    expect(alertShown()).toBeNull();
    await advance(1_000);
    expect(alertShown()).toBe("5");

    fireEvent.click(screen.getByRole("button", { name: "Dismiss" }));
    await advance(5 * MIN - 1_000);
    expect(clock()).toBe("0:01");
    expect(alertShown()).toBeNull();
    expect(gets).toBeGreaterThan(200); // asked every 10 s
  });

  it("asks for the attempt at 0:00 and stops counting once the server says it is being scored", async () => {
    renderHeader();
    await advance(40 * MIN - 5_000);
    const before = gets;
    state = "scoring";
    await advance(5_000);
    expect(gets).toBe(before + 1); // at 0:00, not 10 s later
    expect(screen.getByTestId("exam-clock").dataset.leftMs).toBeUndefined(); // no countdown
    expect(alertShown()).toBeNull();
  });

  it("stops asking every 10 s once the attempt is scored", async () => {
    state = "scored";
    renderHeader();
    await advance(60_000);
    expect(gets).toBe(1);
    await act(async () => window.dispatchEvent(new Event("focus")));
    expect(gets).toBe(2); // coming back to the page still asks
  });

  it("does not count before the time starts", async () => {
    state = "starting";
    renderHeader();
    await advance(0);
    expect(clock()).toBe("Not started");
    await advance(35 * MIN);
    expect(alertShown()).toBeNull();
  });
});
