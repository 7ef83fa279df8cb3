"use client";
/**
 * One tab per shell over a stack of terminals: each machine's first shell, then the learner's
 * extra ones (`node01 #2`, server/sessions/tabs.ts) after it. Every terminal stays mounted for the
 * life of the page; inactive ones are only made invisible, so their shells, sockets and scrollback
 * live on and each keeps its size (no refit or remote resize on every tab switch). The active tab
 * is the workspace's state (active-machine.tsx), so "run in machine" buttons can switch it too.
 * "+" opens another shell on the active tab's machine (at most MAX_SHELLS_PER_MACHINE); an extra
 * tab's "×" closes it, and its shell, after a confirm. Extra tabs are kept on the server, so a
 * reload shows them again with their shells.
 */
import { useTranslations } from "next-intl";
import { useEffect, useId, useState, type KeyboardEvent } from "react";
import { Terminal } from "@/components/terminal/Terminal";
import { rememberTabToken, sessionTokens, type TabToken } from "@/components/terminal/session-tokens";
import { MAX_SHELLS_PER_MACHINE, terminalName, type TabView } from "@/server/terminal/tab-names";

/** The tabs in order: each machine's first shell, then its extra ones by number. */
function orderedTabs(machines: readonly string[], extra: readonly TabView[]): TabView[] {
  return machines.flatMap((machine) => [
    { machine, number: 1 },
    ...extra.filter((t) => t.machine === machine).sort((a, b) => a.number - b.number),
  ]);
}

export function TerminalTabs(props: {
  slug: string;
  machines: readonly string[];
  /** The active terminal's name (`node01`, `node01#2`). */
  active: string | undefined;
  onSelect(name: string): void;
}) {
  const { slug, machines, active, onSelect: setActive } = props;
  const ids = useTabIds();

  function select(name: string) {
    setActive(name);
    // After the click's render the terminal is visible and can take focus, so the learner can type right away.
    requestAnimationFrame(() => window.__labdeck?.terminals[name]?.focus());
  }

  const { extra, tabError, openShell, closeShell } = useExtraShells(slug, active, select);
  const tabs = orderedTabs(machines, extra);
  const activeMachine = tabs.find((tab) => terminalName(tab.machine, tab.number) === active)?.machine;
  const shellsOnActive = activeMachine ? tabs.filter((tab) => tab.machine === activeMachine).length : 0;
  return (
    <div className="flex h-full flex-col bg-[#0b1020]" data-testid="terminal-tabs">
      <div className="flex shrink-0 items-end gap-px border-b border-slate-700 bg-slate-800 px-2 pt-1">
        <TabList tabs={tabs} active={active} ids={ids} onSelect={setActive} onOpen={select} onClose={(tab) => void closeShell(tab)} />
        {activeMachine && <NewShellButton machine={activeMachine} shells={shellsOnActive} onOpen={() => void openShell(activeMachine)} />}
        {tabError && (
          <span role="alert" data-testid="shell-error" className="mb-0.5 self-center truncate px-2 text-xs text-red-300">
            {tabError}
          </span>
        )}
        {activeMachine && <PreviewButton slug={slug} machine={activeMachine} />}
        {activeMachine && <ResetMachineButton key={activeMachine} slug={slug} machine={activeMachine} />}
      </div>
      {/* Terminals are stacked in one box; each fills it, the active one is visible. */}
      <div className="relative min-h-0 flex-1">
        {tabs.map((tab) => {
          const name = terminalName(tab.machine, tab.number);
          const selected = name === active;
          return (
            <div
              key={name}
              id={ids.panel(name)}
              role="tabpanel"
              aria-labelledby={ids.tab(name)}
              data-machine={tab.machine}
              data-terminal={name}
              className={`absolute inset-0 ${selected ? "visible" : "invisible"}`}
            >
              <Terminal slug={slug} machine={tab.machine} number={tab.number} active={selected} />
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** Element ids of each terminal's tab and panel (aria-controls, aria-labelledby), unique in the page. */
type TabIds = { tab(name: string): string; panel(name: string): string };

function useTabIds(): TabIds {
  const idPrefix = useId();
  return {
    tab: (name) => `${idPrefix}-tab-${name.replace("#", "-")}`,
    panel: (name) => `${idPrefix}-panel-${name.replace("#", "-")}`,
  };
}

/**
 * The learner's extra shells: those the session already has (a reload, another window), and
 * opening (POST …/tabs) and closing (DELETE …/tabs/:machine/:number, after a confirm) them. A
 * new shell becomes the active tab; closing the active one goes back to its machine's first shell.
 */
function useExtraShells(slug: string, active: string | undefined, select: (name: string) => void) {
  const t = useTranslations("lab");
  const [extra, setExtra] = useState<TabView[]>([]);
  const [tabError, setTabError] = useState<string>();

  useEffect(() => {
    let disposed = false;
    void sessionTokens(slug).then(
      (answer) => !disposed && setExtra(answer.tabs),
      () => undefined, // the terminals show why the session could not be opened
    );
    return () => {
      disposed = true;
    };
  }, [slug]);

  async function openShell(machine: string) {
    setTabError(undefined);
    try {
      const { sessionId } = await sessionTokens(slug);
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/tabs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ machine }),
      });
      const body = (await response.json().catch(() => ({}))) as Partial<TabToken> & { error?: string };
      if (!response.ok || body.number === undefined || !body.token) return setTabError(body.error ?? t("shellFailed"));
      const tab = { machine, number: body.number, token: body.token };
      await rememberTabToken(slug, tab);
      setExtra((shown) => [...shown.filter((s) => s.machine !== machine || s.number !== tab.number), { machine, number: tab.number }]);
      select(terminalName(machine, tab.number));
    } catch {
      setTabError(t("shellFailed"));
    }
  }

  async function closeShell(tab: TabView) {
    const label = t("tabName", { machine: tab.machine, number: tab.number });
    if (!window.confirm(t("confirmCloseShell", { name: label }))) return;
    setTabError(undefined);
    try {
      const { sessionId } = await sessionTokens(slug);
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/tabs/${encodeURIComponent(tab.machine)}/${tab.number}`, {
        method: "DELETE",
      });
      if (!response.ok && response.status !== 404) {
        const body = (await response.json().catch(() => ({}))) as { error?: string };
        return setTabError(body.error ?? t("shellFailed"));
      }
      setExtra((shown) => shown.filter((s) => s.machine !== tab.machine || s.number !== tab.number));
      if (active === terminalName(tab.machine, tab.number)) select(tab.machine);
    } catch {
      setTabError(t("shellFailed"));
    }
  }

  return { extra, tabError, openShell, closeShell };
}

/** The tabs, one per shell; an extra shell's tab has a "×" that closes it. Arrow keys move between tabs. */
function TabList(props: {
  tabs: readonly TabView[];
  active: string | undefined;
  ids: TabIds;
  /** Makes a tab active (the arrow keys, which keep the focus on the tab bar). */
  onSelect(name: string): void;
  /** Makes a tab active and focuses its terminal (a click). */
  onOpen(name: string): void;
  onClose(tab: TabView): void;
}) {
  const t = useTranslations("lab");
  const { tabs, active, ids } = props;
  const names = tabs.map((tab) => terminalName(tab.machine, tab.number));

  /** Arrow keys move between tabs, as the WAI-ARIA tabs pattern expects. */
  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (step === 0 || active === undefined || (event.target as HTMLElement).getAttribute("role") !== "tab") return;
    const next = names[(names.indexOf(active) + step + names.length) % names.length];
    if (next === undefined) return;
    event.preventDefault();
    props.onSelect(next);
    document.getElementById(ids.tab(next))?.focus();
  }

  return (
    <div role="tablist" aria-label={t("tablist")} onKeyDown={onKeyDown} className="flex min-w-0 flex-wrap gap-px">
      {tabs.map((tab) => {
        const name = terminalName(tab.machine, tab.number);
        const selected = name === active;
        const label = tab.number === 1 ? tab.machine : t("tabName", { machine: tab.machine, number: tab.number });
        return (
          <div
            key={name}
            className={`flex items-center rounded-t font-mono text-xs transition-colors ${
              selected ? "bg-[#0b1020] text-white" : "text-slate-400 hover:bg-slate-700 hover:text-slate-100"
            }`}
          >
            <button
              id={ids.tab(name)}
              type="button"
              role="tab"
              aria-selected={selected}
              aria-controls={ids.panel(name)}
              tabIndex={selected ? 0 : -1}
              data-machine={tab.machine}
              data-terminal={name}
              onClick={() => props.onOpen(name)}
              className={`py-1.5 ${tab.number === 1 ? "px-3" : "pl-3 pr-1"}`}
            >
              {label}
            </button>
            {tab.number > 1 && (
              <button
                type="button"
                data-testid={`close-shell-${name}`}
                aria-label={t("closeShell", { name: label })}
                title={t("closeShell", { name: label })}
                onClick={() => props.onClose(tab)}
                className="mr-1 rounded px-1 text-slate-500 hover:bg-slate-600 hover:text-white"
              >
                ×
              </button>
            )}
          </div>
        );
      })}
    </div>
  );
}

/** "+": another shell on the active tab's machine, while it has fewer than MAX_SHELLS_PER_MACHINE. */
function NewShellButton({ machine, shells, onOpen }: { machine: string; shells: number; onOpen(): void }) {
  const t = useTranslations("lab");
  const full = shells >= MAX_SHELLS_PER_MACHINE;
  return (
    <button
      type="button"
      data-testid="new-shell"
      aria-label={t("newShell", { machine })}
      title={full ? t("shellLimit", { max: MAX_SHELLS_PER_MACHINE }) : t("newShell", { machine })}
      disabled={full}
      onClick={onOpen}
      className="mb-0.5 self-center rounded px-2 text-sm text-slate-400 hover:bg-slate-700 hover:text-slate-100 disabled:opacity-40"
    >
      +
    </button>
  );
}

/**
 * Opens a web service of the active machine in a new browser tab through the web preview
 * (server/preview/): asks for the port, then GET /api/labs/:slug/preview, which sends the browser
 * on to the preview's own origin.
 */
function PreviewButton({ slug, machine }: { slug: string; machine: string }) {
  const t = useTranslations("lab");
  const open = () => {
    const answer = window.prompt(t("previewPrompt", { machine }), "80");
    if (answer === null) return;
    const port = Number(answer.trim());
    if (!Number.isInteger(port) || port < 1 || port > 65535) return void window.alert(t("previewBadPort"));
    window.open(labPreviewUrl(slug, machine, port), "_blank", "noopener");
  };
  return (
    <button
      type="button"
      data-testid="open-preview"
      title={t("previewTitle", { machine })}
      onClick={open}
      className="ml-auto self-center rounded px-2 py-0.5 text-xs text-slate-400 hover:bg-slate-700 hover:text-slate-100"
    >
      {t("preview")}
    </button>
  );
}

/** The entry URL of `http://<machine>:<port><path>` of the learner's own session of a lab. */
export function labPreviewUrl(slug: string, machine: string, port: number, path = "/"): string {
  const query = new URLSearchParams({ machine, port: String(port), path });
  return `/api/labs/${encodeURIComponent(slug)}/preview?${query}`;
}

/** Puts the active machine back to the lab's start (fresh disk + the lab's setup), after a confirm. */
function ResetMachineButton({ slug, machine }: { slug: string; machine: string }) {
  const t = useTranslations("lab");
  const [state, setState] = useState<"idle" | "busy" | "error">("idle");
  const reset = async () => {
    if (!window.confirm(t("confirmReset", { machine }))) return;
    setState("busy");
    try {
      const { sessionId } = await sessionTokens(slug);
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/machines/${encodeURIComponent(machine)}/reset`, {
        method: "POST",
      });
      setState(response.ok ? "idle" : "error");
    } catch {
      setState("error");
    }
  };
  return (
    <button
      type="button"
      data-testid="reset-machine"
      disabled={state === "busy"}
      onClick={() => void reset()}
      className="self-center rounded px-2 py-0.5 text-xs text-slate-400 hover:bg-slate-700 hover:text-slate-100 disabled:opacity-50"
    >
      {state === "busy" ? t("resetting") : state === "error" ? t("resetFailed") : t("reset")}
    </button>
  );
}
