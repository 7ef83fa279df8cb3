/**
 * The fix-up run in a guest after a restore is valid bash, and its Python parts compile (both run
 * only inside a VM otherwise, where a typo costs a failed reset).
 */
import { execFileSync } from "node:child_process";
import { expect, it } from "vitest";
import { afterRestoreScript } from "./snapshots";

function pythonParts(script: string): string[] {
  return [...script.matchAll(/python3 - <<'PY'\n([\s\S]*?)\nPY/g)].map((m) => m[1]!);
}

it("is valid bash with compiling Python, with and without the holder restart (which waits for its socket)", () => {
  for (const restartHolder of [false, true]) {
    const script = afterRestoreScript({ epochMs: 1_796_000_000_000, restartHolder });
    execFileSync("bash", ["-n"], { input: script });
    const parts = pythonParts(script);
    expect(parts).toHaveLength(restartHolder ? 2 : 1);
    for (const part of parts) execFileSync("python3", ["-c", `compile(${JSON.stringify(part)}, "fix-up", "exec")`]);
    expect(script.includes("holder.sock")).toBe(restartHolder);
  }
});
