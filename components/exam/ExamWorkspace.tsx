"use client";
/**
 * The exam view: the lab workspace's terminals (the same tabs, copy and paste, start progress)
 * on the right, the exam on the left (ExamPanel), the countdown in the header and its alerts
 * under it. The attempt comes from the exam API (useExam), asked every 10 s and on focus, so a
 * submission by time is seen; once submitted, the terminals carry a read-only notice.
 */
import { useTranslations } from "next-intl";
import Link from "next/link";
import { Group, Panel, Separator } from "react-resizable-panels";
import { useSessionId } from "@/components/lab/LabGuide";
import { RecordingNotice } from "@/components/lab/RecordingNotice";
import { StartProgress } from "@/components/lab/StartProgress";
import { useMachineSwitch, type LabWorkspaceLab } from "@/components/lab/LabWorkspace";
import { TerminalTabs } from "@/components/lab/TerminalTabs";
import { MachineSwitchProvider } from "@/components/lesson/machine-switch";
import { ExamAlert, ExamClock, useExamClock } from "./ExamClock";
import type { ExamTask } from "./exam-api";
import { ExamPanel } from "./ExamPanel";
import { ReadOnlyNotice } from "./ExamStatus";
import { useExam } from "./useExam";

/** What the exam view needs to know about the exam's lab: the lab view's (the version is its tasks'). */
export type ExamWorkspaceLab = LabWorkspaceLab;

export function ExamWorkspace(props: { lab: ExamWorkspaceLab; lessonMarkdown: string; tasks: readonly ExamTask[] }) {
  const t = useTranslations("lab");
  const { lab, lessonMarkdown, tasks } = props;
  const { activeTerminal, setActiveTerminal, machineSwitch } = useMachineSwitch(lab);
  const { sessionId, sessionError } = useSessionId(lab.slug);
  const feed = useExam(sessionId);
  const countdown = useExamClock(feed);
  const running = feed.exam?.state === "running";
  const feedWithStart = sessionError && !feed.error ? { ...feed, error: sessionError } : feed;
  return (
    <MachineSwitchProvider value={machineSwitch}>
      <div className="flex min-h-0 flex-1 flex-col" data-testid="exam-workspace" data-lab={lab.slug} data-lab-version={lab.version}>
        <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
          <Link href="/" className="text-xs text-slate-500 hover:text-sky-700">
            ← {t("back")}
          </Link>
          <h1 className="truncate text-sm font-semibold">{lab.title}</h1>
          <div className="ml-auto flex items-center gap-4">
            <RecordingNotice slug={lab.slug} />
            {(running || feed.exam?.state === "starting") && <ExamClock leftMs={countdown.leftMs} />}
          </div>
        </div>
        <ExamAlert alert={countdown.alert} onDismiss={countdown.dismiss} />
        <div className="min-h-0 flex-1">
          <Group orientation="horizontal" id="exam-workspace">
            <Panel id="exam" defaultSize="42%" minSize="20%" className="bg-white">
              <ExamPanel
                sessionId={sessionId}
                feed={feedWithStart}
                tasks={tasks}
                lessonMarkdown={lessonMarkdown}
                timeUp={countdown.timeUp}
                onOpenTask={(task) => setActiveTerminal((active) => (active?.split("#")[0] === task.machine ? active : task.machine))}
              />
            </Panel>
            <Separator
              aria-label={t("resize")}
              className="w-1.5 bg-slate-200 transition-colors data-[separator=active]:bg-sky-500 data-[separator=focus]:bg-sky-400 data-[separator=hover]:bg-sky-300"
            />
            <Panel id="terminals" minSize="25%" style={{ overflow: "hidden", position: "relative" }}>
              <TerminalTabs slug={lab.slug} machines={lab.machines} active={activeTerminal} onSelect={setActiveTerminal} />
              <StartProgress slug={lab.slug} />
              <ReadOnlyNotice exam={feed.exam} />
            </Panel>
          </Group>
        </div>
      </div>
    </MachineSwitchProvider>
  );
}
