"use client";
/**
 * The lab view: lesson on the left, terminal tabs on the right, split by a draggable separator.
 * Fills its parent's height (the layout's <main> is a flex column), so the terminals get a
 * definite size to fit to.
 */
import Link from "next/link";
import { Group, Panel, Separator } from "react-resizable-panels";
import { Lesson } from "@/components/lesson/Lesson";
import { TerminalTabs } from "./TerminalTabs";

/** What the lab view needs to know about a lab; plain data, passed from the server page. */
export type LabWorkspaceLab = {
  slug: string;
  title: string;
  machines: string[];
};

const TEXT = {
  back: "ラボ一覧",
  resize: "レッスンとターミナルの幅を変更",
} as const;

export function LabWorkspace({ lab, lessonMarkdown }: { lab: LabWorkspaceLab; lessonMarkdown: string }) {
  return (
    <div className="flex min-h-0 flex-1 flex-col" data-testid="lab-workspace" data-lab={lab.slug}>
      <div className="flex h-10 shrink-0 items-center gap-3 border-b border-slate-200 bg-white px-4">
        <Link href="/" className="text-xs text-slate-500 hover:text-sky-700">
          ← {TEXT.back}
        </Link>
        <h1 className="truncate text-sm font-semibold">{lab.title}</h1>
      </div>
      <div className="min-h-0 flex-1">
        <Group orientation="horizontal" id="lab-workspace">
          <Panel id="lesson" defaultSize="42%" minSize="20%" className="bg-white">
            <Lesson markdown={lessonMarkdown} />
          </Panel>
          <Separator
            aria-label={TEXT.resize}
            className="w-1.5 bg-slate-200 transition-colors data-[separator=active]:bg-sky-500 data-[separator=focus]:bg-sky-400 data-[separator=hover]:bg-sky-300"
          />
          <Panel id="terminals" minSize="25%" style={{ overflow: "hidden" }}>
            <TerminalTabs slug={lab.slug} machines={lab.machines} />
          </Panel>
        </Group>
      </div>
    </div>
  );
}
