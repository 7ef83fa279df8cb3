/**
 * The Kubernetes API as the KubeVirt provider uses it: a handful of REST calls in one namespace
 * (create, get, list, watch, delete, subresource PUTs, access reviews), each answer parsed, each
 * failure turned into an error that says what is wrong in one sentence.
 *
 * @kubernetes/client-node (1.4, the last line that runs on Node 20) supplies what is hard to get
 * right: kubeconfig files with their contexts, client certificates, bearer tokens, exec and OIDC
 * credential plugins, and the in-cluster service account (a token file re-read as the kubelet
 * rotates it). Its generated API classes are not used: KubeVirt's subresources
 * (subresources.kubevirt.io …/start, /stop, /restart) are outside them, and one request path keeps
 * the error mapping (missing CRDs, RBAC, quota) in one place. Requests go through Node's
 * http/https with the options the KubeConfig applies.
 */
import http from "node:http";
import https from "node:https";
import { KubeConfig } from "@kubernetes/client-node";
import { z } from "zod";
import { QuotaExceededError } from "./capacity";

/** One API call's limit, ms (watches have none: they end when the caller aborts). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Largest response body read, bytes (a list of a few thousand VMs stays well below). */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface ApiResource {
  /** API group; "" for core/v1. */
  group: string;
  version: string;
  /** URL name (plural). */
  plural: string;
  /** What it is called in messages, e.g. "virtualmachines.kubevirt.io". */
  readonly label?: string;
  /** What to tell an operator when the group is not served at all. */
  missing: string;
}

const KUBEVIRT_MISSING =
  "KubeVirt is not installed in this cluster (the kubevirt.io API group is not served): install the KubeVirt operator and its KubeVirt custom resource, or choose another LABDECK_MACHINES";
const CDI_MISSING =
  "CDI (the Containerized Data Importer) is not installed in this cluster (cdi.kubevirt.io is not served): lab VMs clone their disks with it; install the CDI operator";
const MULTUS_MISSING =
  "Multus is not installed in this cluster (k8s.cni.cncf.io NetworkAttachmentDefinitions are not served): each lab session's eth1 is a Multus network; install Multus and the bridge CNI plugin";
const CORE_MISSING = "the Kubernetes API does not serve this resource (is the API server address right?)";

export const RESOURCES = {
  virtualMachines: { group: "kubevirt.io", version: "v1", plural: "virtualmachines", missing: KUBEVIRT_MISSING },
  virtualMachineInstances: { group: "kubevirt.io", version: "v1", plural: "virtualmachineinstances", missing: KUBEVIRT_MISSING },
  dataVolumes: { group: "cdi.kubevirt.io", version: "v1beta1", plural: "datavolumes", missing: CDI_MISSING },
  networkAttachmentDefinitions: {
    group: "k8s.cni.cncf.io",
    version: "v1",
    plural: "network-attachment-definitions",
    missing: MULTUS_MISSING,
  },
  networkPolicies: { group: "networking.k8s.io", version: "v1", plural: "networkpolicies", missing: CORE_MISSING },
  secrets: { group: "", version: "v1", plural: "secrets", missing: CORE_MISSING },
  services: { group: "", version: "v1", plural: "services", missing: CORE_MISSING },
  resourceQuotas: { group: "", version: "v1", plural: "resourcequotas", missing: CORE_MISSING },
} as const satisfies Record<string, ApiResource>;
export type ResourceName = keyof typeof RESOURCES;

/** KubeVirt's VM subresources (PUT, RBAC verb "update" on virtualmachines/<name> in subresources.kubevirt.io). */
export type VmAction = "start" | "stop" | "restart";

/**
 * Everything the provider does in its namespace, as RBAC rules: the Role in
 * deploy/kubernetes/base/rbac.yaml must grant exactly this (deploy-manifests.test.ts), and the
 * provider checks it at start with SelfSubjectAccessReviews (`missingAccess`).
 */
export const REQUIRED_ACCESS: readonly { group: string; resources: string[]; verbs: string[] }[] = [
  { group: "kubevirt.io", resources: ["virtualmachines"], verbs: ["create", "get", "list", "delete"] },
  { group: "kubevirt.io", resources: ["virtualmachineinstances"], verbs: ["get", "list", "watch"] },
  {
    group: "subresources.kubevirt.io",
    resources: ["virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart"],
    verbs: ["update"],
  },
  { group: "cdi.kubevirt.io", resources: ["datavolumes"], verbs: ["create", "get"] },
  { group: "k8s.cni.cncf.io", resources: ["network-attachment-definitions"], verbs: ["create", "list", "delete"] },
  { group: "networking.k8s.io", resources: ["networkpolicies"], verbs: ["create", "list", "delete"] },
  { group: "", resources: ["secrets"], verbs: ["create", "list", "delete"] },
  { group: "", resources: ["services"], verbs: ["create", "get", "list", "delete"] },
  { group: "", resources: ["resourcequotas"], verbs: ["list"] },
];

/** A Kubernetes Status (the body of every error answer). */
const Status = z.looseObject({
  kind: z.literal("Status").optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  details: z
    .looseObject({
      name: z.string().optional(),
      kind: z.string().optional(),
      causes: z.array(z.looseObject({ field: z.string().optional(), message: z.string().optional() })).optional(),
    })
    .optional(),
});

/** An API answer that is none of the named cases below. */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The API group is not served (CRD not installed); its message says which component is missing. */
export class KubeResourceMissingError extends Error {
  readonly code = "KUBE_RESOURCE_MISSING";
}

/** The service account may not do something the provider needs; the message names it. */
export class KubePermissionError extends Error {
  readonly code = "KUBE_FORBIDDEN";
}

export interface KubeConnection {
  /** A kubeconfig file; none: the pod's service account (in-cluster). */
  kubeconfig?: string;
  /** The context to use in the kubeconfig; none: its current context. */
  context?: string;
  /** In-cluster: the API server's address (KUBERNETES_SERVICE_HOST/PORT, read by config.ts). */
  inCluster?: { host: string; port: number };
  /** Overrides the kubeconfig context's namespace. */
  namespace?: string;
}

/** Where the kubelet mounts a pod's service account (Kubernetes docs: "Accessing the API from a Pod"). */
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** A KubeConfig and namespace from the connection settings; throws naming what is missing. */
export function loadKubeConfig(connection: KubeConnection): { config: KubeConfig; namespace: string } {
  const config = new KubeConfig();
  if (connection.kubeconfig) {
    config.loadFromFile(connection.kubeconfig);
    if (connection.context) config.setCurrentContext(connection.context);
  } else if (connection.inCluster) {
    const host = connection.inCluster.host.includes(":") ? `[${connection.inCluster.host}]` : connection.inCluster.host;
    // As KubeConfig.loadFromCluster, without it reading process.env (config.ts is the one reader).
    config.loadFromOptions({
      clusters: [
        {
          name: "in-cluster",
          server: `https://${host}:${connection.inCluster.port}`,
          caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt`,
          skipTLSVerify: false,
        },
      ],
      users: [{ name: "service-account", authProvider: { name: "tokenFile", config: { tokenFile: `${SERVICE_ACCOUNT_DIR}/token` } } }],
      contexts: [{ name: "in-cluster", cluster: "in-cluster", user: "service-account", namespace: connection.namespace }],
      currentContext: "in-cluster",
    });
  } else {
    throw new Error("the kubevirt provider needs LABDECK_KUBECONFIG, or to run in a pod (KUBERNETES_SERVICE_HOST set by Kubernetes)");
  }
  const namespace = connection.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace;
  if (!namespace) throw new Error("no namespace for lab VMs: set LABDECK_KUBEVIRT_NAMESPACE (or a namespace in the kubeconfig context)");
  if (!config.getCurrentCluster())
    throw new Error(`kubeconfig ${connection.kubeconfig ?? "(in-cluster)"} has no cluster for context ${config.getCurrentContext()}`);
  return { config, namespace };
}

export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: unknown;
}

/** The namespace's API, as the provider uses it. */
export class KubeApi {
  private readonly server: URL;

  constructor(
    private readonly config: KubeConfig,
    readonly namespace: string,
  ) {
    this.server = new URL(config.getCurrentCluster()!.server);
  }

  /** POST; the created object, or null when it exists already and `alreadyExists` is "ok" (an idempotent ensure). */
  async create(resource: ResourceName, body: unknown, options: { alreadyExists?: "ok" } = {}): Promise<unknown> {
    const r = RESOURCES[resource];
    const answer = await this.request("POST", collectionPath(r, this.namespace), body);
    if (answer.status === 409 && options.alreadyExists === "ok") return null;
    return this.expectOk(answer, "create", r);
  }

  /** GET one object; null when it does not exist. */
  async get(resource: ResourceName, name: string): Promise<unknown | null> {
    const r = RESOURCES[resource];
    const answer = await this.request("GET", `${collectionPath(r, this.namespace)}/${encodeURIComponent(name)}`);
    if (objectNotFound(answer)) return null;
    return this.expectOk(answer, "get", r);
  }

  /** GET the collection, optionally by label selector; its items. */
  async list(resource: ResourceName, labelSelector?: string): Promise<unknown[]> {
    const r = RESOURCES[resource];
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
    const body = await this.expectOk(await this.request("GET", collectionPath(r, this.namespace) + query), "list", r);
    return z.looseObject({ items: z.array(z.unknown()).nullable().default([]) }).parse(body).items ?? [];
  }

  /** DELETE one object; false when it was already gone. Dependents go in the background unless `foreground`. */
  async delete(resource: ResourceName, name: string, options: { foreground?: boolean } = {}): Promise<boolean> {
    const r = RESOURCES[resource];
    const body = { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: options.foreground ? "Foreground" : "Background" };
    const answer = await this.request("DELETE", `${collectionPath(r, this.namespace)}/${encodeURIComponent(name)}`, body);
    if (objectNotFound(answer)) return false;
    await this.expectOk(answer, "delete", r);
    return true;
  }

  /** PUT a VM subresource: start, stop or restart (with RestartOptions/StopOptions as `body`). */
  async vmAction(name: string, action: VmAction, body: unknown = {}): Promise<void> {
    const r = { group: "subresources.kubevirt.io", version: "v1", plural: "virtualmachines", missing: KUBEVIRT_MISSING };
    const answer = await this.request("PUT", `${collectionPath(r, this.namespace)}/${encodeURIComponent(name)}/${action}`, body);
    if (objectNotFound(answer)) throw new KubeApiError(404, "NotFound", `virtual machine ${name} does not exist`);
    await this.expectOk(answer, "update", { ...r, plural: `virtualmachines/${action}` });
  }

  /**
   * Watches the collection (by label selector) from `resourceVersion` until `signal` aborts or the
   * server ends the watch (it does after a few minutes: the caller lists and watches again).
   */
  async watch(
    resource: ResourceName,
    options: { labelSelector?: string; resourceVersion?: string; signal: AbortSignal },
    onEvent: (event: WatchEvent) => void,
  ): Promise<void> {
    const r = RESOURCES[resource];
    const query = new URLSearchParams({ watch: "true", allowWatchBookmarks: "true" });
    if (options.labelSelector) query.set("labelSelector", options.labelSelector);
    if (options.resourceVersion) query.set("resourceVersion", options.resourceVersion);
    const { response } = await this.open("GET", `${collectionPath(r, this.namespace)}?${query}`, undefined, options.signal, 0);
    if (response.statusCode !== 200) {
      const body = await readBody(response);
      await this.expectOk({ status: response.statusCode ?? 0, body }, "watch", r);
    }
    await new Promise<void>((resolve, reject) => {
      let buffered = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        buffered += chunk;
        for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (!line) continue;
          const event = z
            .looseObject({ type: z.enum(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]), object: z.unknown() })
            .safeParse(safeJson(line));
          if (event.success) onEvent(event.data);
        }
      });
      response.once("end", resolve);
      response.once("close", resolve);
      response.once("error", (error) => (options.signal.aborted ? resolve() : reject(error)));
    });
  }

  /** The resourceVersion of a list, for a watch that starts right after it. */
  async listWithVersion(resource: ResourceName, labelSelector?: string): Promise<{ items: unknown[]; resourceVersion?: string }> {
    const r = RESOURCES[resource];
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
    const body = await this.expectOk(await this.request("GET", collectionPath(r, this.namespace) + query), "list", r);
    const parsed = z
      .looseObject({
        items: z.array(z.unknown()).nullable().default([]),
        metadata: z.looseObject({ resourceVersion: z.string().optional() }).optional(),
      })
      .parse(body);
    return { items: parsed.items ?? [], resourceVersion: parsed.metadata?.resourceVersion };
  }

  /** Whether the group/version is served at all (discovery); false on 404. */
  async serves(resource: ResourceName): Promise<boolean> {
    const r = RESOURCES[resource];
    const answer = await this.request("GET", r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`);
    if (answer.status === 404) return false;
    await this.expectOk(answer, "get", r);
    return true;
  }

  /** Each of REQUIRED_ACCESS's (group, resource, verb) the service account is not allowed, by SelfSubjectAccessReview. */
  async missingAccess(): Promise<string[]> {
    const checks = REQUIRED_ACCESS.flatMap((rule) =>
      rule.resources.flatMap((resource) => rule.verbs.map((verb) => ({ group: rule.group, resource, verb }))),
    );
    const denied = await Promise.all(
      checks.map(async ({ group, resource, verb }) => {
        const [plural, subresource] = resource.split("/");
        const review = {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: { namespace: this.namespace, group, resource: plural, subresource, verb } },
        };
        const answer = await this.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review);
        const body = await this.expectOk(answer, "create", {
          group: "authorization.k8s.io",
          version: "v1",
          plural: "selfsubjectaccessreviews",
          missing: CORE_MISSING,
        });
        const allowed = z.looseObject({ status: z.looseObject({ allowed: z.boolean() }).optional() }).parse(body).status?.allowed ?? false;
        return allowed ? null : `${verb} ${resource}${group ? `.${group}` : ""}`;
      }),
    );
    return denied.filter((d): d is string => d !== null);
  }

  private async expectOk(answer: { status: number; body: string }, verb: string, r: ApiResource): Promise<unknown> {
    if (answer.status >= 200 && answer.status < 300) return safeJson(answer.body);
    const status = Status.safeParse(safeJson(answer.body));
    const reason = status.success ? status.data.reason : undefined;
    const message = (status.success ? status.data.message : undefined) ?? answer.body.slice(0, 300);
    const what = `${r.plural}${r.group ? `.${r.group}` : ""}`;
    if (answer.status === 404) throw new KubeResourceMissingError(r.missing);
    if (answer.status === 403 && /exceeded quota/i.test(message)) {
      throw new QuotaExceededError(`${verb} ${what}: ${message}`);
    }
    if (answer.status === 403) {
      throw new KubePermissionError(
        `Labdeck's Kubernetes account may not ${verb} ${what} in namespace ${this.namespace} (${message}); grant it with the Role in deploy/kubernetes/base/rbac.yaml`,
      );
    }
    if (answer.status === 401)
      throw new KubePermissionError(
        `the Kubernetes API refused Labdeck's credentials (401: ${message}); check the kubeconfig or the service account token`,
      );
    const causes = status.success ? (status.data.details?.causes ?? []).map((c) => `${c.field ?? ""}: ${c.message ?? ""}`).join("; ") : "";
    throw new KubeApiError(
      answer.status,
      reason,
      `${verb} ${what}: ${answer.status} ${reason ?? ""} ${message}${causes ? ` (${causes})` : ""}`.replace(/\s+/g, " ").trim(),
    );
  }

  private async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
    const { response } = await this.open(method, path, body, undefined, REQUEST_TIMEOUT_MS);
    return { status: response.statusCode ?? 0, body: await readBody(response) };
  }

  private async open(
    method: string,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<{ response: http.IncomingMessage }> {
    const url = new URL(this.server.pathname.replace(/\/+$/, "") + path, this.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const options: https.RequestOptions = {
      method,
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port,
      path: url.pathname + url.search,
      headers: { Accept: "application/json", ...(payload ? { "Content-Type": "application/json", "Content-Length": payload.length } : {}) },
      signal,
    };
    await this.config.applyToHTTPSOptions(options);
    const transport = url.protocol === "https:" ? https : http;
    if (url.protocol === "http:") delete options.agent; // an https.Agent cannot carry plain HTTP
    return new Promise((resolve, reject) => {
      const request = transport.request(options, (response) => resolve({ response }));
      if (timeoutMs > 0)
        request.setTimeout(timeoutMs, () =>
          request.destroy(new Error(`Kubernetes API ${method} ${url.pathname}: no answer within ${timeoutMs} ms`)),
        );
      request.once("error", (error) =>
        reject(new Error(`Kubernetes API at ${this.server.origin}: ${method} ${url.pathname}: ${error.message}`)),
      );
      request.end(payload);
    });
  }
}

function collectionPath(r: ApiResource, namespace: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return `${base}/namespaces/${encodeURIComponent(namespace)}/${r.plural}`;
}

/**
 * A 404 about the object (a Status with reason NotFound naming it), as opposed to a 404 for the
 * whole resource type (a group that is not served answers "404 page not found" without a Status).
 */
function objectNotFound(answer: { status: number; body: string }): boolean {
  if (answer.status !== 404) return false;
  const status = Status.safeParse(safeJson(answer.body));
  return status.success && status.data.reason === "NotFound" && status.data.details?.name !== undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readBody(response: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`Kubernetes API answer larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
