"use client";
/**
 * A fenced code block from the lesson, with a copy button, and with a "run in machine" button
 * when the block names a machine of this lab (`runOn`). Both use the text the block shows (read
 * from the DOM), so it is exactly what the learner sees.
 */
import { useTranslations } from "next-intl";
import { useEffect, useRef, useState, type ReactNode } from "react";
import { copyText } from "@/components/clipboard";
import { useRunInMachine } from "@/components/lesson/machine-switch";

/** How long a button shows the result of a copy or run, in milliseconds. */
const COPY_FEEDBACK_MS = 1500;

type CopyState = "idle" | "copied" | "failed";
type RunState = "idle" | "ran" | "failed";

export function CodeBlock({ children, runOn }: { children: ReactNode; runOn?: string }) {
  const t = useTranslations("codeBlock");
  const preRef = useRef<HTMLPreElement>(null);
  const [state, setState] = useState<CopyState>("idle");
  const [runState, setRunState] = useState<RunState>("idle");
  const runInMachine = useRunInMachine(runOn);

  useEffect(() => {
    if (state === "idle") return;
    const timer = setTimeout(() => setState("idle"), COPY_FEEDBACK_MS);
    return () => clearTimeout(timer);
  }, [state]);

  useEffect(() => {
    if (runState === "idle") return;
    const timer = setTimeout(() => setRunState("idle"), COPY_FEEDBACK_MS);
    return () => clearTimeout(timer);
  }, [runState]);

  function blockText(): string {
    return (preRef.current?.textContent ?? "").replace(/\n$/, "");
  }

  async function copy() {
    setState((await copyText(blockText())) ? "copied" : "failed");
  }

  function run() {
    if (!runInMachine || runOn === undefined) return;
    setRunState(runInMachine(blockText()) ? "ran" : "failed");
  }

  return (
    <div className="group relative my-4" data-testid="code-block">
      <pre ref={preRef} className="overflow-x-auto rounded-md bg-slate-900 px-4 py-3 font-mono text-[13px] leading-6 text-slate-100">
        {children}
      </pre>
      <div className="absolute top-2 right-2 flex gap-1.5">
        {runInMachine && runOn !== undefined && (
          <button
            type="button"
            onClick={run}
            data-run-machine={runOn}
            data-run-state={runState}
            className="rounded border border-sky-500 bg-sky-600 px-2 py-0.5 text-xs font-medium text-white shadow-sm transition hover:bg-sky-500 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-sky-300"
          >
            {runState === "failed" ? (
              t("notReady")
            ) : runState === "ran" ? (
              t("ran")
            ) : (
              <>
                <span aria-hidden="true">▶ </span>
                {t("run", { machine: runOn })}
              </>
            )}
          </button>
        )}
        <button
          type="button"
          onClick={copy}
          data-copy-state={state}
          className="rounded border border-slate-600 bg-slate-800 px-2 py-0.5 text-xs text-slate-200 opacity-80 transition hover:opacity-100 focus:opacity-100"
        >
          {state === "copied" ? t("copied") : state === "failed" ? t("failed") : t("copy")}
        </button>
      </div>
    </div>
  );
}
