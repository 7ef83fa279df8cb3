/**
 * After a platform restart (KubeVirt provider): every machine set Labdeck made in the namespace,
 * found by its objects' labels, is served again when the database keeps its session, else
 * deleted. Everything needed is in the cluster, so any replica can do it.
 */
import type { RecoveryReport } from "../provider";
import { destroySet } from "./lifecycle";
import { ALL_SETS_SELECTOR, ANNOTATION_SET_ID } from "./manifests";
import type { KubevirtRuntime } from "./runtime";
import { Named } from "./vmis";

export async function adoptOrCleanup(
  runtime: KubevirtRuntime,
  options: { keep?: (sessionId: string) => boolean } = {},
): Promise<RecoveryReport> {
  const keep = options.keep ?? (() => true);
  const sets = new Set<string>();
  for (const resource of ["virtualMachines", "secrets", "services", "networkPolicies", "networkAttachmentDefinitions"] as const) {
    for (const item of await runtime.api.list(resource, ALL_SETS_SELECTOR)) {
      const id = Named.parse(item).metadata.annotations?.[ANNOTATION_SET_ID];
      if (id) sets.add(id);
    }
  }
  const report: RecoveryReport = { adopted: [], cleaned: [] };
  for (const id of sets) {
    if (keep(id)) report.adopted.push(id);
    else {
      await destroySet(runtime, id);
      report.cleaned.push(id);
    }
  }
  return report;
}
