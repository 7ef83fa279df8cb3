"use client";
/**
 * A fenced code block from the lesson, with a copy button. The copied text is what the block
 * shows (read from the DOM), so it is exactly what the learner sees.
 */
import { useEffect, useRef, useState, type ReactNode } from "react";

const TEXT = {
  copy: "コピー",
  copied: "コピーしました",
  failed: "コピーできません",
} as const;

/** How long the button shows the result of a copy, in milliseconds. */
const COPY_FEEDBACK_MS = 1500;

type CopyState = "idle" | "copied" | "failed";

export function CodeBlock({ children }: { children: ReactNode }) {
  const preRef = useRef<HTMLPreElement>(null);
  const [state, setState] = useState<CopyState>("idle");

  useEffect(() => {
    if (state === "idle") return;
    const timer = setTimeout(() => setState("idle"), COPY_FEEDBACK_MS);
    return () => clearTimeout(timer);
  }, [state]);

  async function copy() {
    const text = (preRef.current?.textContent ?? "").replace(/\n$/, "");
    setState((await copyText(text)) ? "copied" : "failed");
  }

  return (
    <div className="group relative my-4" data-testid="code-block">
      <pre
        ref={preRef}
        className="overflow-x-auto rounded-md bg-slate-900 px-4 py-3 font-mono text-[13px] leading-6 text-slate-100"
      >
        {children}
      </pre>
      <button
        type="button"
        onClick={copy}
        data-copy-state={state}
        className="absolute top-2 right-2 rounded border border-slate-600 bg-slate-800 px-2 py-0.5 text-xs text-slate-200 opacity-80 transition hover:opacity-100 focus:opacity-100"
      >
        {state === "copied" ? TEXT.copied : state === "failed" ? TEXT.failed : TEXT.copy}
      </button>
    </div>
  );
}

/**
 * navigator.clipboard exists only in secure contexts (https, localhost). A classroom server on
 * plain http at a LAN address is not one, so fall back to the older execCommand("copy").
 */
async function copyText(text: string): Promise<boolean> {
  if (window.isSecureContext && navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Permission denied or document not focused: try the fallback below.
    }
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  try {
    return document.execCommand("copy");
  } finally {
    area.remove();
  }
}
