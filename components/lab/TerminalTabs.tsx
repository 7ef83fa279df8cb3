"use client";
/**
 * One tab per machine over a stack of terminals. Every terminal stays mounted for the life of the
 * page; inactive ones are only made invisible, so their shells, sockets and scrollback live on
 * and each keeps its size (no refit or remote resize on every tab switch). The active machine is
 * the workspace's state (active-machine.tsx), so "run in machine" buttons can switch it too.
 */
import { useTranslations } from "next-intl";
import { useId, type KeyboardEvent } from "react";
import { Terminal } from "@/components/terminal/Terminal";

export function TerminalTabs(props: {
  slug: string;
  machines: readonly string[];
  active: string | undefined;
  onSelect(machine: string): void;
}) {
  const t = useTranslations("lab");
  const { slug, machines, active, onSelect: setActive } = props;
  const idPrefix = useId();
  const tabId = (machine: string) => `${idPrefix}-tab-${machine}`;
  const panelId = (machine: string) => `${idPrefix}-panel-${machine}`;

  /** Arrow keys move between tabs, as the WAI-ARIA tabs pattern expects. */
  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (step === 0 || active === undefined) return;
    const next = machines[(machines.indexOf(active) + step + machines.length) % machines.length];
    if (next === undefined) return;
    event.preventDefault();
    setActive(next);
    document.getElementById(tabId(next))?.focus();
  }

  return (
    <div className="flex h-full flex-col bg-[#0b1020]" data-testid="terminal-tabs">
      <div
        role="tablist"
        aria-label={t("tablist")}
        onKeyDown={onKeyDown}
        className="flex shrink-0 gap-px border-b border-slate-700 bg-slate-800 px-2 pt-1"
      >
        {machines.map((machine) => {
          const selected = machine === active;
          return (
            <button
              key={machine}
              id={tabId(machine)}
              type="button"
              role="tab"
              aria-selected={selected}
              aria-controls={panelId(machine)}
              tabIndex={selected ? 0 : -1}
              data-machine={machine}
              onClick={() => {
                setActive(machine);
                // After the click's render the terminal is visible and can take focus, so the
                // learner can type right away.
                requestAnimationFrame(() => window.__labdeck?.terminals[machine]?.focus());
              }}
              className={`rounded-t px-3 py-1.5 font-mono text-xs transition-colors ${
                selected ? "bg-[#0b1020] text-white" : "text-slate-400 hover:bg-slate-700 hover:text-slate-100"
              }`}
            >
              {machine}
            </button>
          );
        })}
      </div>
      {/* Terminals are stacked in one box; each fills it, the active one is visible. */}
      <div className="relative min-h-0 flex-1">
        {machines.map((machine) => {
          const selected = machine === active;
          return (
            <div
              key={machine}
              id={panelId(machine)}
              role="tabpanel"
              aria-labelledby={tabId(machine)}
              data-machine={machine}
              className={`absolute inset-0 ${selected ? "visible" : "invisible"}`}
            >
              <Terminal slug={slug} machine={machine} active={selected} />
            </div>
          );
        })}
      </div>
    </div>
  );
}
