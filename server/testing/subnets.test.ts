/**
 * Integration files may run side by side (`--fileParallelism`; CI runs them one at a time, a
 * developer may not), each on sshd hosts of its own subnets (10.213.S.0/24, netns-hosts.ts): no
 * two files may name the same one. Read from the
 * files' text: `subnet: N`, `SUBNET = N` (and BARE_SUBNET), `SUBNETS = [..]`, `[a, b].map((subnet)`.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOTS = ["server", "scripts", "e2e"];

async function intTestFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== "node_modules") out.push(...(await intTestFiles(p)));
    else if (entry.name.endsWith(".int.test.ts")) out.push(p);
  }
  return out;
}

/** Subnet numbers a file names. */
export function subnetsNamed(text: string): number[] {
  const found: number[] = [];
  for (const m of text.matchAll(/\b(?:subnet:\s*|[A-Z_]*SUBNET\s*=\s*)(\d+)\b/g)) found.push(Number(m[1]));
  for (const m of text.matchAll(/\b(?:[A-Z_]*SUBNETS\s*=\s*)\[([\d,\s]+)\]|\[([\d,\s]+)\]\.map\(\(subnet\)/g)) {
    found.push(...(m[1] ?? m[2])!.split(",").map((n) => Number(n.trim())));
  }
  return [...new Set(found)].sort((a, b) => a - b);
}

describe("integration test subnets", () => {
  it("reads every form a file names its subnets in", () => {
    expect(subnetsNamed("const SUBNET = 72;\nconst BARE_SUBNET = 73;\nstartTestStack({ subnet: 41 })")).toEqual([41, 72, 73]);
    expect(subnetsNamed("const SUBNETS = [100, 101];\n[121, 122].map((subnet) => x)")).toEqual([100, 101, 121, 122]);
  });

  it("no two integration test files use the same subnet", async () => {
    const owners = new Map<number, string>();
    const clashes: string[] = [];
    const files = (await Promise.all(ROOTS.map((r) => intTestFiles(r)))).flat().sort();
    for (const file of files) {
      for (const subnet of subnetsNamed(await fs.readFile(file, "utf8"))) {
        const owner = owners.get(subnet);
        if (owner) clashes.push(`${subnet}: ${owner} and ${file}`);
        else owners.set(subnet, file);
      }
    }
    expect(owners.size).toBeGreaterThan(20);
    expect(clashes).toEqual([]);
  });
});
