"use client";
/**
 * Lesson text: Markdown (GitHub flavour: tables, task lists) rendered with react-markdown, which
 * never renders raw HTML from the source. Fenced code blocks get a copy button, and a "run in
 * machine" button when their info string says `run=<machine>` (```bash run=node01); line breaks
 * inside Japanese paragraphs do not become spaces (remark-cjk-breaks.ts), and emphasis next to
 * Japanese punctuation works (remark-cjk-friendly). `LessonMarkdown` is the
 * same rendering for other lab text (steps, hints).
 */
import { memo, type ComponentProps } from "react";
import { useMachineSwitch } from "@/components/lesson/machine-switch";
import Markdown, { type Components, type ExtraProps } from "react-markdown";
import remarkCjkFriendly from "remark-cjk-friendly";
import remarkGfm from "remark-gfm";
import { CodeBlock } from "./CodeBlock";
import { previewLinkTarget } from "./preview-link";
import { remarkCjkBreaks } from "./remark-cjk-breaks";

/**
 * remark-cjk-friendly: CommonMark's flanking rules do not open or close `**` next to CJK
 * punctuation (`**「再起動した後も」**` stays literal); the plugin relaxes exactly those rules.
 */
const REMARK_PLUGINS = [remarkGfm, remarkCjkFriendly, remarkCjkBreaks];

const components: Components = {
  h1: ({ node: _node, ...props }) => <h1 className="mt-2 mb-4 text-2xl font-bold" {...props} />,
  h2: ({ node: _node, ...props }) => <h2 className="mt-8 mb-3 border-b border-slate-200 pb-1 text-xl font-semibold" {...props} />,
  h3: ({ node: _node, ...props }) => <h3 className="mt-6 mb-2 text-lg font-semibold" {...props} />,
  h4: ({ node: _node, ...props }) => <h4 className="mt-4 mb-2 font-semibold" {...props} />,
  p: ({ node: _node, ...props }) => <p className="my-3" {...props} />,
  ul: ({ node: _node, ...props }) => <ul className="my-3 list-disc space-y-1 pl-6" {...props} />,
  ol: ({ node: _node, ...props }) => <ol className="my-3 list-decimal space-y-1 pl-6" {...props} />,
  a: ({ node: _node, href, ...props }) => <LessonLink href={href} {...props} />,
  blockquote: ({ node: _node, ...props }) => <blockquote className="my-4 border-l-4 border-slate-300 pl-4 text-slate-600" {...props} />,
  table: ({ node: _node, ...props }) => (
    <div className="my-4 overflow-x-auto">
      <table className="min-w-full border-collapse text-sm" {...props} />
    </div>
  ),
  th: ({ node: _node, ...props }) => <th className="border border-slate-300 bg-slate-100 px-3 py-1.5 text-left font-semibold" {...props} />,
  td: ({ node: _node, ...props }) => <td className="border border-slate-300 px-3 py-1.5 align-top" {...props} />,
  hr: () => <hr className="my-6 border-slate-200" />,
  pre: ({ node, children }) => <CodeBlock runOn={runMachine(node)}>{children}</CodeBlock>,
};

/**
 * A lesson link; `http://<machine>:<port>/…` of one of the lab's machines opens that service of
 * the learner's own session through the web preview, in a new tab (preview-link.ts).
 */
function LessonLink({ href, ...props }: ComponentProps<"a">) {
  const machineSwitch = useMachineSwitch();
  const target = machineSwitch?.previewUrl ? previewLinkTarget(href, machineSwitch.machines) : null;
  const to = target && machineSwitch?.previewUrl ? machineSwitch.previewUrl(target.machine, target.port, target.path) : href;
  const external = to !== undefined && (target !== null || /^https?:\/\//.test(to));
  return (
    <a
      href={to}
      className="text-sky-700 underline underline-offset-2 hover:text-sky-900"
      data-preview={target ? `${target.machine}:${target.port}` : undefined}
      {...(external ? { target: "_blank", rel: "noopener noreferrer" } : {})}
      {...props}
    />
  );
}

/** Lesson text with its padding, as the lab page's lesson panel. */
export function Lesson({ markdown }: { markdown: string }) {
  return (
    <article data-testid="lesson" className="px-6 py-5">
      <LessonMarkdown markdown={markdown} />
    </article>
  );
}

/**
 * Lab Markdown in the lesson's typography, without padding: for step texts and hints. Memoised:
 * the lab page re-renders on every progress event, and the text has not changed.
 */
export const LessonMarkdown = memo(function LessonMarkdown({ markdown }: { markdown: string }) {
  return (
    <div
      // Inline code only; code inside <pre> is styled by CodeBlock.
      className="text-[15px] leading-7 text-slate-800 [&_:not(pre)>code]:rounded [&_:not(pre)>code]:bg-slate-100 [&_:not(pre)>code]:px-1 [&_:not(pre)>code]:py-0.5 [&_:not(pre)>code]:font-mono [&_:not(pre)>code]:text-[0.9em] [&_:not(pre)>code]:text-rose-800"
    >
      <Markdown remarkPlugins={REMARK_PLUGINS} components={components}>
        {markdown}
      </Markdown>
    </div>
  );
});

/**
 * The machine a fenced block asks to run on: `run=<machine>` in its info string after the
 * language. mdast-util-to-hast puts the info string's rest (the "meta") on the <code> element's
 * `data.meta`, and react-markdown passes hast nodes to components, so <pre> finds it on its child.
 */
export function runMachine(pre: ExtraProps["node"]): string | undefined {
  const code = pre?.children[0];
  const meta = code?.type === "element" ? code.data?.meta : undefined;
  return meta?.match(/(?:^|\s)run=(\S+)/)?.[1];
}
