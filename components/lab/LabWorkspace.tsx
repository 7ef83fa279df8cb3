"use client";
/**
 * The lab view: lesson (and steps, when the lab has any) on the left, terminal tabs on the right,
 * split by a draggable separator. Fills its parent's height (the layout's <main> is a flex
 * column), so the terminals get a definite size to fit to. Owns which machine's terminal is shown
 * and shares the switch with the code blocks' "run in machine" buttons.
 */
import { useTranslations } from "next-intl";
import Link from "next/link";
import { useMemo, useState } from "react";
import { Group, Panel, Separator } from "react-resizable-panels";
import { Lesson } from "@/components/lesson/Lesson";
import { MachineSwitchProvider, type MachineSwitch } from "../lesson/machine-switch";
import { LabGuide } from "./LabGuide";
import type { StepText } from "./StepPanel";
import { labPreviewUrl, TerminalTabs } from "./TerminalTabs";
import { RecordingNotice } from "./RecordingNotice";
import { StartProgress } from "./StartProgress";
import { WatchNotice } from "./WatchNotice";

/** What the lab view needs to know about a lab; plain data, passed from the server page. */
export type LabWorkspaceLab = {
  slug: string;
  title: string;
  machines: string[];
  /** The lab version the page's steps are of (the session's, or the current one before a session). */
  version: string;
};

export function LabWorkspace(props: { lab: LabWorkspaceLab; lessonMarkdown: string; steps: readonly StepText[] }) {
  const t = useTranslations("lab");
  const { lab, lessonMarkdown, steps } = props;
  const { activeTerminal, setActiveTerminal, machineSwitch } = useMachineSwitch(lab);
  return (
    <MachineSwitchProvider value={machineSwitch}>
      <div className="flex min-h-0 flex-1 flex-col" data-testid="lab-workspace" data-lab={lab.slug} data-lab-version={lab.version}>
        <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
          <Link href="/" className="text-xs text-slate-500 hover:text-sky-700">
            ← {t("back")}
          </Link>
          <h1 className="truncate text-sm font-semibold">{lab.title}</h1>
          <div className="ml-auto flex items-center gap-3">
            <RecordingNotice slug={lab.slug} />
            <WatchNotice slug={lab.slug} />
          </div>
        </div>
        <div className="min-h-0 flex-1">
          <Group orientation="horizontal" id="lab-workspace">
            <Panel id="lesson" defaultSize="42%" minSize="20%" className="bg-white">
              {steps.length > 0 ? (
                <LabGuide slug={lab.slug} version={lab.version} lessonMarkdown={lessonMarkdown} steps={steps} />
              ) : (
                <Lesson markdown={lessonMarkdown} />
              )}
            </Panel>
            <Separator
              aria-label={t("resize")}
              className="w-1.5 bg-slate-200 transition-colors data-[separator=active]:bg-sky-500 data-[separator=focus]:bg-sky-400 data-[separator=hover]:bg-sky-300"
            />
            <Panel id="terminals" minSize="25%" style={{ overflow: "hidden", position: "relative" }}>
              <TerminalTabs slug={lab.slug} machines={lab.machines} active={activeTerminal} onSelect={setActiveTerminal} />
              <StartProgress slug={lab.slug} />
            </Panel>
          </Group>
        </div>
      </div>
    </MachineSwitchProvider>
  );
}

/** The terminal shown, and the lesson's way to switch it (and to open a machine's preview), for the lab and exam views. */
export function useMachineSwitch(lab: Pick<LabWorkspaceLab, "slug" | "machines">) {
  const [activeTerminal, setActiveTerminal] = useState(lab.machines[0]);
  const machineSwitch = useMemo<MachineSwitch>(
    () => ({
      machines: lab.machines,
      select: setActiveTerminal,
      previewUrl: (machine, port, path) => labPreviewUrl(lab.slug, machine, port, path),
    }),
    [lab.machines, lab.slug],
  );
  return { activeTerminal, setActiveTerminal, machineSwitch };
}
