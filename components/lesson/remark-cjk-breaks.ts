/**
 * remark plugin: drop a soft line break (a newline inside a paragraph) when a Japanese character
 * is on either side of it. Markdown turns such a newline into a space, which is right between
 * English words but shows as a stray gap in Japanese ("慣れます。 あなた"); authors still get to
 * wrap long lines in the source. Code spans and blocks are separate node types and untouched.
 */

/** Han, kana, CJK punctuation (U+3000–303F) and full-width forms (U+FF00–FFEF). */
const CJK = String.raw`[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3000-\u303f\uff00-\uffef]`;
const BREAK_AFTER_CJK = new RegExp(String.raw`(${CJK})\n`, "gu");
const BREAK_BEFORE_CJK = new RegExp(String.raw`\n(${CJK})`, "gu");

/** The part of an mdast node this plugin reads; structural so no mdast types are needed. */
type MdNode = { type: string; value?: unknown; children?: MdNode[] };

export function joinCjkLines(text: string): string {
  return text.replace(BREAK_AFTER_CJK, "$1").replace(BREAK_BEFORE_CJK, "$1");
}

export function remarkCjkBreaks() {
  return (tree: MdNode) => visit(tree);
}

function visit(node: MdNode): void {
  if (node.type === "text" && typeof node.value === "string") node.value = joinCjkLines(node.value);
  node.children?.forEach(visit);
}
