/**
 * Labdeck's Kubernetes deployment (deploy/kubernetes/, kustomize). Neither kubectl, kustomize nor
 * helm installs from the registries this project reaches, so the test renders the example overlay
 * itself (the kustomize features it uses: resources, namespace, images, replicas, JSON 6902
 * patches), keeps the result as a golden file (deploy/kubernetes/overlays/example/rendered.yaml,
 * which `kubectl apply -f` also takes), and checks it: every object against the API types, the
 * Role against what the provider does, every environment variable against the server's
 * configuration schema, probes, metrics and the ingress settings terminals and event streams need.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { z } from "zod";
import { Env, parseEnv } from "../../config";
import { validateObject } from "./api-types";
import { REQUIRED_ACCESS } from "./cluster";

const DEPLOY = path.resolve("deploy/kubernetes");
type Obj = Record<string, any>;

const Kustomization = z.strictObject({
  apiVersion: z.literal("kustomize.config.k8s.io/v1beta1"),
  kind: z.literal("Kustomization"),
  namespace: z.string().optional(),
  resources: z.array(z.string()),
  images: z.array(z.strictObject({ name: z.string(), newName: z.string().optional(), newTag: z.string().optional() })).optional(),
  replicas: z.array(z.strictObject({ name: z.string(), count: z.number().int() })).optional(),
  patches: z.array(z.strictObject({ target: z.strictObject({ kind: z.string(), name: z.string() }), patch: z.string() })).optional(),
});
const JsonPatch = z.array(
  z.strictObject({ op: z.enum(["replace", "add", "remove"]), path: z.string().startsWith("/"), value: z.unknown().optional() }),
);

/** The subset of `kustomize build` the deployment uses; anything else in a kustomization is refused by the schema. */
async function build(dir: string): Promise<Obj[]> {
  const k = Kustomization.parse((await readYaml(path.join(dir, "kustomization.yaml")))[0]);
  const objects: Obj[] = [];
  for (const resource of k.resources) {
    const target = path.join(dir, resource);
    objects.push(...((await fs.stat(target)).isDirectory() ? await build(target) : await readYaml(target)));
  }
  for (const o of objects) if (k.namespace) o.metadata.namespace = k.namespace;
  for (const image of k.images ?? []) {
    for (const c of objects.flatMap((o) => o.spec?.template?.spec?.containers ?? [])) {
      const [name, tag] = (c.image as string).split(/:(?=[^/]+$)/);
      if (name === image.name) c.image = `${image.newName ?? name}:${image.newTag ?? tag}`;
    }
  }
  for (const r of k.replicas ?? []) {
    const target = objects.find((o) => o.kind === "Deployment" && o.metadata.name === r.name);
    if (!target) throw new Error(`replicas: no Deployment ${r.name}`);
    target.spec.replicas = r.count;
  }
  for (const p of k.patches ?? []) {
    const target = objects.find((o) => o.kind === p.target.kind && o.metadata.name === p.target.name);
    if (!target) throw new Error(`patch: no ${p.target.kind} ${p.target.name}`);
    for (const op of JsonPatch.parse((await import("yaml")).parse(p.patch))) applyPatch(target, op);
  }
  return objects;
}

function applyPatch(target: Obj, op: { op: string; path: string; value?: unknown }): void {
  const keys = op.path
    .slice(1)
    .split("/")
    .map((k) => k.replaceAll("~1", "/").replaceAll("~0", "~"));
  const last = keys.pop()!;
  let at: any = target;
  for (const key of keys) {
    if (at[key] === undefined) throw new Error(`patch path ${op.path}: ${key} does not exist`);
    at = at[key];
  }
  if (op.op !== "add" && at[last] === undefined) throw new Error(`patch path ${op.path} does not exist`);
  if (op.op === "remove") delete at[last];
  else at[last] = op.value;
}

async function readYaml(file: string): Promise<Obj[]> {
  return parseAllDocuments(await fs.readFile(file, "utf8"))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const objects = await build(path.join(DEPLOY, "overlays/example"));
const one = (kind: string) => {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

describe("deploy/kubernetes (kustomize), rendered here", () => {
  it("renders to the committed manifest, and every object is valid against the API types", async () => {
    for (const object of objects) expect(validateObject(object), `${object.kind} ${object.metadata.name}`).toEqual([]);
    expect(objects.every((o) => o.metadata.namespace === "labdeck")).toBe(true);
    await expect(
      `# Rendered from deploy/kubernetes/overlays/example by server/machines/kubevirt/deploy-manifests.test.ts (vitest -u rewrites it).\n${objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n")}`,
    ).toMatchFileSnapshot(path.join(DEPLOY, "overlays/example/rendered.yaml"));
  });

  it("the Role grants exactly what the provider does (REQUIRED_ACCESS), bound to the Deployment's service account, in its own namespace", () => {
    const role = one("Role");
    const grants = (rules: { apiGroups?: string[]; group?: string; resources: string[]; verbs: string[] }[]) =>
      new Set(
        rules.flatMap((r) =>
          (r.apiGroups ?? [r.group!]).flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}.${g}`))),
        ),
      );
    expect(grants(role.rules)).toEqual(grants(REQUIRED_ACCESS as never));
    expect(objects.some((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding")).toBe(false);
    const binding = one("RoleBinding");
    const deployment = one("Deployment");
    expect(binding.roleRef.name).toBe(role.metadata.name);
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: deployment.spec.template.spec.serviceAccountName }]);
  });

  it("every environment variable is one the server reads, and they parse as its configuration", () => {
    const deployment = one("Deployment");
    const container = deployment.spec.template.spec.containers[0];
    const names = (container.env as { name: string }[]).map((e) => e.name);
    expect(names.filter((n) => !(n in Env.shape))).toEqual([]);
    // Secret and field references get stand-ins of their kind, as the kubelet would fill them in.
    const stand = (e: Obj): string =>
      e.value ??
      (e.valueFrom.fieldRef
        ? "labdeck"
        : e.valueFrom.secretKeyRef.key === "database-url"
          ? "postgresql://labdeck:x@postgres:5432/labdeck"
          : "0".repeat(64));
    const env = parseEnv(Object.fromEntries((container.env as Obj[]).map((e) => [e.name, stand(e)])));
    expect(env).toMatchObject({
      LABDECK_MACHINES: "kubevirt",
      HOST: "0.0.0.0",
      LABDECK_PUBLIC_URL: "https://labs.example.org",
      LABDECK_METRICS_PORT: 9464,
    });
    expect(container.env.find((e: Obj) => e.name === "DATABASE_URL").valueFrom.secretKeyRef).toEqual({
      name: "labdeck",
      key: "database-url",
    });
    // The lab VMs' NetworkPolicy admits pods with these labels to SSH: the app's pods must have them.
    expect(deployment.spec.template.metadata.labels).toMatchObject(env.LABDECK_KUBEVIRT_PLATFORM_LABELS);
  });

  it("probes /healthz and /readyz on the HTTP port, metrics scraped from the open metrics port, N replicas behind a PDB", () => {
    const deployment = one("Deployment");
    const container = deployment.spec.template.spec.containers[0];
    expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(container.ports).toEqual([
      { name: "http", containerPort: 3000 },
      { name: "metrics", containerPort: 9464 },
    ]);
    const annotations = deployment.spec.template.metadata.annotations;
    expect(annotations).toEqual({ "prometheus.io/scrape": "true", "prometheus.io/port": "9464", "prometheus.io/path": "/metrics" });
    expect(deployment.spec.replicas).toBe(3);
    expect(container.image).toBe("registry.example.com/labdeck/app:0.1.0");
    expect(one("PodDisruptionBudget").spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(one("Service").spec.ports[0].targetPort).toBe("http");
  });

  it("the Ingress keeps terminals (WebSocket) and event streams (SSE) open an hour, unbuffered, for the overlay's host", () => {
    const ingress = one("Ingress");
    const a = ingress.metadata.annotations;
    expect(Number(a["nginx.ingress.kubernetes.io/proxy-read-timeout"])).toBeGreaterThanOrEqual(3600);
    expect(Number(a["nginx.ingress.kubernetes.io/proxy-send-timeout"])).toBeGreaterThanOrEqual(3600);
    expect(a["nginx.ingress.kubernetes.io/proxy-buffering"]).toBe("off");
    expect(ingress.spec.rules[0].host).toBe("labs.example.org");
    expect(ingress.spec.tls[0].hosts).toEqual(["labs.example.org"]);
    expect(ingress.spec.rules[0].http.paths[0].backend.service).toEqual({ name: "labdeck", port: { name: "http" } });
  });
});
