/** Shell commands of README.md, with the heading they stand under (scripts/readme.int.test.ts, scripts/up.int.test.ts). */
export interface ReadmeCommand {
  heading: string;
  command: string;
  /** From a ```bash block (true) or an inline `code span` of the text (false). */
  block: boolean;
}

/**
 * Every line of the ```bash blocks (comments and blank lines dropped, a trailing `# ...`
 * removed), and inline code spans of the text that run a script (`... bash scripts/x.sh`).
 */
export function readmeCommands(markdown: string): ReadmeCommand[] {
  const out: ReadmeCommand[] = [];
  let heading = "";
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const f = /^```(\w*)/.exec(line);
    if (f) {
      fence = fence === null ? f[1]! : null;
      continue;
    }
    if (fence !== null) {
      if (fence !== "bash") continue;
      const command = line.replace(/\s+#.*$/, "").trim();
      if (command && !command.startsWith("#")) out.push({ heading, command, block: true });
      continue;
    }
    const h = /^#+\s+(.*)$/.exec(line);
    if (h) {
      heading = h[1]!.trim();
      continue;
    }
    for (const m of line.matchAll(/`([^`]*\bbash scripts\/[^`]+)`/g)) out.push({ heading, command: m[1]!.trim(), block: false });
  }
  return out;
}
