/**
 * A FAKE Kubernetes API server with KubeVirt, for tests and the bench: the far edge of the KubeVirt
 * provider, and nothing else is fake. It speaks the subset the provider uses over real HTTP with a
 * bearer token (kubeconfig written for it): create, get, list (label selectors), watch and delete
 * of VirtualMachines, VirtualMachineInstances, Secrets, Services, NetworkPolicies,
 * NetworkAttachmentDefinitions and DataVolumes; ResourceQuota lists; the VM subresources start,
 * stop and restart; API discovery; SelfSubjectAccessReviews. Objects are validated against
 * api-types.ts (422 as the real API server would), errors are Kubernetes Status objects, and
 * missing CRDs and RBAC answer as a real cluster does (404 "page not found" for a group that is not
 * served, 403 naming the user, verb and resource, 403 "exceeded quota" from quota admission).
 *
 * A started VMI is a REAL machine: a netns sshd host (server/testing/netns-hosts.ts) whose
 * hostname, SSH host key and root's authorized key come from the VM's cloud-init Secret, at an
 * address reserved for the VM's Service when the Service is made (the fake's ClusterIP = the host's
 * address; a real cluster routes a ClusterIP to the pod, whose IP changes at every restart). No
 * eth1 (the bridge network is not faked) and no disk: a reset gives a fresh host, a reboot a fresh
 * sshd, as a fresh disk and a new boot would look to SSH.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import type net from "node:net";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { log } from "../log";
import { validateObject } from "../machines/kubevirt/api-types";
import { parseQuantity } from "../machines/kubevirt/capacity";
import { launcherOverheadMiB } from "../machines/kubevirt/sizing";
import { createNetnsHosts, type NetnsHostSet } from "./netns-hosts";

/** The fake's node name in VMI statuses. */
const NODE_NAME = "fake-node-1";
/** A served group's discovery answer (only its presence matters to the provider). */
const SERVED_GROUPS = { kubevirt: "kubevirt.io", cdi: "cdi.kubevirt.io", multus: "k8s.cni.cncf.io" } as const;

type Kind =
  | "virtualmachines"
  | "virtualmachineinstances"
  | "secrets"
  | "services"
  | "networkpolicies"
  | "network-attachment-definitions"
  | "datavolumes"
  | "resourcequotas";
const GROUP_OF: Record<Kind, string> = {
  virtualmachines: "kubevirt.io",
  virtualmachineinstances: "kubevirt.io",
  secrets: "",
  services: "",
  networkpolicies: "networking.k8s.io",
  "network-attachment-definitions": "k8s.cni.cncf.io",
  datavolumes: "cdi.kubevirt.io",
  resourcequotas: "",
};

export interface FakeKubeApiOptions {
  namespace: string;
  /** Where the netns hosts keep their files. */
  dir: string;
  /** Third octets (10.213.S.0/24) the fake may give VMs, one per VM with a Service; none used by other tests. */
  subnets: readonly number[];
  /** API groups this cluster serves (default: all); `kubevirt: false` is a cluster without KubeVirt. */
  serves?: Partial<Record<keyof typeof SERVED_GROUPS, boolean>>;
  /** RBAC refusals, as "verb resource[.group]" (e.g. "create virtualmachines.kubevirt.io", "update virtualmachines/restart.subresources.kubevirt.io"). */
  deny?: readonly string[];
  /** The namespace's ResourceQuota `hard` (none: no quota). */
  quota?: Record<string, string>;
  /**
   * The quota has no status yet (the quota controller has not synced it, as just after it was
   * made): a client cannot see the limit, only admission at pod creation refuses.
   */
  quotaWithoutStatus?: boolean;
  /** Ends every watch after this many ms, as API servers do after their request timeout (minutes there): clients must list and watch again. */
  watchTimeoutMs?: number;
}

export interface FakeKubeApi {
  url: string;
  /** A kubeconfig file for the fake (bearer token, namespace). */
  kubeconfig: string;
  /** Every request: method, path, status, server-side ms. */
  readonly requests: { method: string; path: string; status: number; ms: number }[];
  /** Stored objects of a kind (what a test inspects). */
  objects(kind: Kind): Record<string, any>[];
  /** The guest powers itself off (or crashes): its host goes, its VMI ends Succeeded and stays. */
  guestPowerOff(vmName: string): Promise<void>;
  /** The netns host serving a VM now, if it runs. */
  hostOf(vmName: string): NetnsHostSet | undefined;
  /** ms from each VMI start to its host answering SSH (what the fake's "boot" took). */
  readonly bootMs: number[];
  stop(): Promise<void>;
}

interface Stored {
  kind: Kind;
  object: Record<string, any>;
}

/** A VM's current VMI and the netns host that is its machine while it runs. */
interface VmiRun {
  vmi: Record<string, any>;
  hosts?: NetnsHostSet;
  booting?: Promise<void>;
  subnet: number;
}

interface Watcher {
  kind: Kind;
  selector: Record<string, string>;
  res: http.ServerResponse;
}

const Status = (code: number, reason: string, message: string, details?: Record<string, unknown>) => ({
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  code,
  reason,
  message,
  details,
});

/** The stored objects, their change history (resourceVersions) and the open watches. */
class ObjectStore {
  /** The last resourceVersion given out. */
  rv = 1;
  readonly history: { rv: number; type: string; kind: Kind; object: Record<string, any> }[] = [];
  readonly watchers = new Set<Watcher>();
  private readonly stored = new Map<string, Stored>(); // "<kind>/<name>"

  get(kind: Kind, name: string): Record<string, any> | undefined {
    return this.stored.get(`${kind}/${name}`)?.object;
  }

  has(kind: Kind, name: string): boolean {
    return this.stored.has(`${kind}/${name}`);
  }

  list(kind: Kind, selector: Record<string, string> = {}): Record<string, any>[] {
    return [...this.stored.values()].filter((s) => s.kind === kind && matches(s.object, selector)).map((s) => s.object);
  }

  put(kind: Kind, object: Record<string, any>, type: "ADDED" | "MODIFIED"): void {
    this.stored.set(`${kind}/${object.metadata.name}`, { kind, object });
    this.emit(type, kind, object);
  }

  remove(kind: Kind, name: string): void {
    const stored = this.stored.get(`${kind}/${name}`);
    if (!stored) return;
    this.stored.delete(`${kind}/${name}`);
    this.emit("DELETED", kind, stored.object);
  }

  private emit(type: string, kind: Kind, object: Record<string, any>): void {
    object.metadata.resourceVersion = String(++this.rv);
    this.history.push({ rv: this.rv, type, kind, object: structuredClone(object) });
    for (const w of this.watchers) if (w.kind === kind && matches(object, w.selector)) w.res.write(JSON.stringify({ type, object }) + "\n");
  }
}

/** The VMIs: each started one boots a real netns host (after quota admission of its pod). */
class FakeVmis {
  readonly runs = new Map<string, VmiRun>(); // VM name → its current VMI
  /** ms from each VMI start to its host answering SSH (what the fake's "boot" took). */
  readonly bootMs: number[] = [];
  private readonly serviceSubnets = new Map<string, number>(); // Service name → subnet
  private readonly free: number[];

  constructor(
    private readonly store: ObjectStore,
    private readonly options: FakeKubeApiOptions,
  ) {
    this.free = [...options.subnets];
  }

  /** A subnet for a new Service's address (undefined: none left). */
  takeSubnet(service: string): number | undefined {
    const subnet = this.free.shift();
    if (subnet !== undefined) this.serviceSubnets.set(service, subnet);
    return subnet;
  }

  releaseSubnet(service: string): void {
    const subnet = this.serviceSubnets.get(service);
    this.serviceSubnets.delete(service);
    if (subnet !== undefined) this.free.push(subnet);
  }

  /** What the running and booting VMIs' pods request. */
  quotaUsed(): { cpu: number; memoryMiB: number; pods: number } {
    let cpu = 0;
    let memoryMiB = 0;
    let pods = 0;
    for (const run of this.runs.values()) {
      if (!run.hosts && !run.booting) continue;
      const vm = this.store.get("virtualmachines", run.vmi.metadata.name);
      if (!vm) continue;
      const r = podRequests(vm);
      cpu += r.cpu;
      memoryMiB += r.memoryMiB;
      pods++;
    }
    return { cpu, memoryMiB, pods };
  }

  /** A start or restart subresource call. */
  async action(res: http.ServerResponse, name: string, action: "start" | "stop" | "restart", body: unknown): Promise<void> {
    const vm = this.store.get("virtualmachines", name);
    if (!vm) return send(res, 404, notFound("virtualmachines", "kubevirt.io", name));
    const run = this.runs.get(name);
    const active = run !== undefined && !["Succeeded", "Failed"].includes(run.vmi.status?.phase);
    if (action === "start") {
      if (active) return send(res, 409, Status(409, "Conflict", `VM ${name} is already running`));
      if (run) await this.end(name); // a final VMI is replaced
      this.start(vm);
      return send(res, 202, {});
    }
    if (!active) return send(res, 409, Status(409, "Conflict", `VM ${name} is not running`));
    if (action === "stop") {
      send(res, 202, {});
      await this.end(name);
      return;
    }
    // restart: the VMI goes (grace as asked: the fake always ends it at once) and a new one starts.
    z.looseObject({ gracePeriodSeconds: z.number().int().min(0).optional() }).parse(body ?? {});
    send(res, 202, {});
    await this.end(name);
    this.start(vm);
  }

  start(vm: Record<string, any>): VmiRun {
    const name = vm.metadata.name as string;
    const subnet = this.serviceSubnets.get(name);
    const vmi = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: {
        name,
        namespace: this.options.namespace,
        uid: randomUUID(),
        labels: { ...vm.spec.template.metadata?.labels },
        annotations: { ...vm.metadata.annotations },
        creationTimestamp: new Date().toISOString(),
      },
      status: { phase: "Scheduling", conditions: [] as unknown[] },
    };
    const run: VmiRun = { vmi, subnet: subnet ?? -1 };
    this.runs.set(name, run);
    this.store.put("virtualmachineinstances", vmi, "ADDED");
    run.booting = this.boot(run, vm, subnet)
      .catch((error: Error) => {
        log.warn({ err: error.message, vm: name }, "fake kube api: VMI failed");
        this.status(run, {
          phase: "Failed",
          conditions: [{ type: "Ready", status: "False", reason: "FakeBootFailed", message: error.message }],
        });
      })
      .finally(() => {
        run.booting = undefined;
      });
    return run;
  }

  /** Ends a VMI's machine; `phase` keeps the VMI as ended (a guest poweroff), none deletes it (a stop). */
  async end(name: string, phase?: "Succeeded"): Promise<void> {
    const run = this.runs.get(name);
    if (!run) return;
    await run.booting;
    const hosts = run.hosts;
    run.hosts = undefined;
    await hosts?.destroy();
    if (phase) this.status(run, { phase });
    else {
      this.runs.delete(name);
      this.store.remove("virtualmachineinstances", name);
    }
  }

  /** The virt-launcher pod admitted (quota), then the machine: a netns host with the cloud-init identity. */
  private async boot(run: VmiRun, vm: Record<string, any>, subnet: number | undefined): Promise<void> {
    const name = vm.metadata.name as string;
    if (!this.admitted(run, vm)) return;
    if (subnet === undefined) throw new Error(`fake: VM ${name} has no Service, so no address (the provider makes one per VM)`);
    const identity = await cloudInitOf(this.store, vm);
    this.status(run, { phase: "Scheduled", nodeName: NODE_NAME });
    const started = Date.now();
    const hosts = await createNetnsHosts({
      id: `k${subnet}`,
      names: [identity.hostname],
      subnet,
      dir: path.join(this.options.dir, name),
      hostKeys: { [identity.hostname]: identity.hostKey },
      authorizedKeys: identity.authorizedKeys,
    });
    this.bootMs.push(Date.now() - started);
    if (this.runs.get(name) !== run) return void (await hosts.destroy());
    run.hosts = hosts;
    this.status(run, { phase: "Running", interfaces: [{ name: "default", ipAddress: hosts.hosts[0]!.host }] });
  }

  /** Quota admission of the VMI's virt-launcher pod: refused, the VMI stays Pending with the API server's message. */
  private admitted(run: VmiRun, vm: Record<string, any>): boolean {
    const hard = this.options.quota;
    if (!hard) return true;
    // This VMI is not counted yet (its boot has not been registered): used + its own.
    const used = this.quotaUsed();
    const own = podRequests(vm);
    const over =
      (hard["requests.memory"] !== undefined && (used.memoryMiB + own.memoryMiB) * 2 ** 20 > parseQuantity(hard["requests.memory"])) ||
      (hard["requests.cpu"] !== undefined && used.cpu + own.cpu > parseQuantity(hard["requests.cpu"]) + 1e-9) ||
      (hard.pods !== undefined && used.pods + 1 > parseQuantity(hard.pods));
    if (!over) return true;
    run.booting = undefined;
    this.status(run, {
      phase: "Pending",
      conditions: [
        {
          type: "Synchronized",
          status: "False",
          reason: "FailedCreate",
          message: `failed to create virtual machine pod: pods "virt-launcher-${vm.metadata.name}-x" is forbidden: exceeded quota: labdeck, requested: requests.memory=${Math.ceil(own.memoryMiB)}Mi, used: requests.memory=${Math.ceil(used.memoryMiB)}Mi, limited: requests.memory=${hard["requests.memory"] ?? "-"}`,
        },
      ],
    });
    return false;
  }

  private status(run: VmiRun, patch: Record<string, unknown>): void {
    run.vmi.status = { ...run.vmi.status, ...patch };
    if (this.store.has("virtualmachineinstances", run.vmi.metadata.name)) this.store.put("virtualmachineinstances", run.vmi, "MODIFIED");
  }
}

/** A virt-launcher pod's requests, as KubeVirt renders them: the VM's plus its overhead (sizing.ts cites the formula). */
function podRequests(vm: Record<string, any>): { cpu: number; memoryMiB: number } {
  const domain = vm.spec.template.spec.domain;
  const memory = parseQuantity(domain.resources.requests.memory) / 2 ** 20;
  const cores = domain.cpu.cores as number;
  return {
    cpu: parseQuantity(domain.resources.requests.cpu),
    memoryMiB: memory + launcherOverheadMiB({ cores, memoryMiB: parseQuantity(domain.memory.guest) / 2 ** 20 }),
  };
}

/** The identity a VM's cloud-init Secret gives it: hostname, SSH host key, root's authorized keys. */
async function cloudInitOf(
  store: ObjectStore,
  vm: Record<string, any>,
): Promise<{ hostname: string; hostKey: string; authorizedKeys: string }> {
  const volume = (vm.spec.template.spec.volumes as any[]).find((v) => v.cloudInitNoCloud);
  const secret = store.get("secrets", volume?.cloudInitNoCloud?.secretRef?.name ?? "");
  if (!secret) throw new Error(`fake: VM ${vm.metadata.name}: its cloud-init Secret does not exist`);
  const data = secret.stringData?.userdata ?? Buffer.from(secret.data?.userdata ?? "", "base64").toString("utf8");
  if (!data.startsWith("#cloud-config\n")) throw new Error("fake: user data is not #cloud-config");
  const config = z
    .looseObject({
      hostname: z.string(),
      ssh_keys: z.looseObject({ ed25519_private: z.string() }),
      write_files: z.array(z.looseObject({ path: z.string(), content: z.string() })),
    })
    .parse(parseYaml(data));
  const authorized = config.write_files.find((f) => f.path === "/etc/ssh/labdeck/authorized_keys/root");
  if (!authorized) throw new Error("fake: cloud-init gives root no platform key");
  return { hostname: config.hostname, hostKey: config.ssh_keys.ed25519_private, authorizedKeys: authorized.content };
}

/** The API's HTTP side: authentication, discovery, access reviews, subresources and the collections. */
class FakeKubeHandler {
  private readonly serves: Record<keyof typeof SERVED_GROUPS, boolean>;
  private readonly deny: Set<string>;

  constructor(
    private readonly options: FakeKubeApiOptions,
    private readonly token: string,
    private readonly store: ObjectStore,
    private readonly vmis: FakeVmis,
  ) {
    this.serves = { kubevirt: true, cdi: true, multus: true, ...options.serves };
    this.deny = new Set(options.deny ?? []);
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    if (req.headers.authorization !== `Bearer ${this.token}`) return send(res, 401, Status(401, "Unauthorized", "Unauthorized"));
    const body = await readJson(req);
    const p = url.pathname;
    // Discovery.
    const discovery = /^\/apis\/([^/]+)\/([^/]+)$/.exec(p);
    if (discovery && req.method === "GET") {
      if (!this.groupServed(discovery[1]!)) return notServed(res);
      return send(res, 200, { kind: "APIResourceList", groupVersion: `${discovery[1]}/${discovery[2]}`, resources: [] });
    }
    if (p === "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && req.method === "POST") {
      const a = (body as any)?.spec?.resourceAttributes ?? {};
      const resource = `${a.resource}${a.subresource ? `/${a.subresource}` : ""}${a.group ? `.${a.group}` : ""}`;
      return send(res, 201, { ...(body as object), status: { allowed: !this.deny.has(`${a.verb} ${resource}`) } });
    }
    const sub = /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([^/]+)\/virtualmachines\/([^/]+)\/(start|stop|restart)$/.exec(p);
    if (sub) return this.subresource(res, sub[1]!, decodeURIComponent(sub[2]!), sub[3] as "start" | "stop" | "restart", body);
    return this.collection(req, res, url, body);
  }

  private subresource(res: http.ServerResponse, namespace: string, name: string, action: "start" | "stop" | "restart", body: unknown) {
    const ns = this.options.namespace;
    if (!this.serves.kubevirt) return notServed(res);
    if (namespace !== ns)
      return send(res, 403, this.forbidden("update", `virtualmachines/${action}`, "subresources.kubevirt.io", namespace));
    if (this.deny.has(`update virtualmachines/${action}.subresources.kubevirt.io`))
      return send(res, 403, this.forbidden("update", `virtualmachines/${action}`, "subresources.kubevirt.io", ns));
    return this.vmis.action(res, name, action, body);
  }

  /** A namespaced collection or object: the verb from method and query, then RBAC, then the verb. */
  private async collection(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: unknown): Promise<void> {
    const m = /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return notServed(res);
    const group = m[1] ?? "";
    const kind = m[4] as Kind;
    if (group && !this.groupServed(group)) return notServed(res);
    if (!(kind in GROUP_OF) || GROUP_OF[kind] !== group) return notServed(res);
    const name = m[5] ? decodeURIComponent(m[5]) : undefined;
    const verb =
      req.method === "POST"
        ? "create"
        : req.method === "DELETE"
          ? "delete"
          : url.searchParams.get("watch") === "true"
            ? "watch"
            : name
              ? "get"
              : "list";
    if (m[3] !== this.options.namespace || this.deny.has(`${verb} ${kind}${group ? `.${group}` : ""}`))
      return send(res, 403, this.forbidden(verb, kind, group, m[3]!));
    const selector = parseSelector(url.searchParams.get("labelSelector"));
    if (kind === "resourcequotas" && verb === "list") return this.quotaList(res);
    if (verb === "watch") return this.watch(req, res, url, kind, selector);
    if (verb === "list") {
      const items = this.store.list(kind, selector);
      return send(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(this.store.rv) }, items });
    }
    if (verb === "get") {
      const stored = this.store.get(kind, name!);
      return stored ? send(res, 200, stored) : send(res, 404, notFound(kind, group, name!));
    }
    if (verb === "delete") return this.delete(res, kind, group, name!);
    return this.create(res, kind, body as Record<string, any>);
  }

  private quotaList(res: http.ServerResponse): void {
    const { options } = this;
    const used = this.vmis.quotaUsed();
    const status = options.quotaWithoutStatus
      ? {}
      : {
          hard: options.quota,
          used: {
            "requests.cpu": `${Math.round(used.cpu * 1000)}m`,
            "requests.memory": `${Math.ceil(used.memoryMiB)}Mi`,
            pods: String(used.pods),
          },
        };
    const items = options.quota
      ? [
          {
            apiVersion: "v1",
            kind: "ResourceQuota",
            metadata: { name: "labdeck", namespace: options.namespace },
            spec: { hard: options.quota },
            status,
          },
        ]
      : [];
    return send(res, 200, { kind: "ResourceQuotaList", apiVersion: "v1", metadata: { resourceVersion: String(this.store.rv) }, items });
  }

  /** The events after the given resourceVersion, then every new one, until the client goes (or the watch timeout). */
  private watch(req: http.IncomingMessage, res: http.ServerResponse, url: URL, kind: Kind, selector: Record<string, string>): void {
    const since = Number(url.searchParams.get("resourceVersion") ?? this.store.rv);
    res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
    for (const event of this.store.history)
      if (event.rv > since && event.kind === kind && matches(event.object, selector))
        res.write(JSON.stringify({ type: event.type, object: event.object }) + "\n");
    const watcher = { kind, selector, res };
    this.store.watchers.add(watcher);
    const timer = this.options.watchTimeoutMs ? setTimeout(() => res.end(), this.options.watchTimeoutMs) : undefined;
    req.on("close", () => {
      clearTimeout(timer);
      this.store.watchers.delete(watcher);
    });
  }

  private delete(res: http.ServerResponse, kind: Kind, group: string, name: string): void {
    const stored = this.store.get(kind, name);
    if (!stored) return send(res, 404, notFound(kind, group, name));
    if (kind === "virtualmachineinstances")
      return send(res, 405, Status(405, "MethodNotAllowed", "the fake does not delete VMIs directly"));
    if (kind === "virtualmachines") {
      stored.metadata.deletionTimestamp = new Date().toISOString();
      this.store.put(kind, stored, "MODIFIED");
      // Dependents first (the VMI, the root disk), then the VM, as with propagationPolicy Foreground.
      void this.vmis.end(name).then(() => this.store.remove(kind, name));
      return send(res, 200, stored);
    }
    this.store.remove(kind, name);
    if (kind === "services") this.vmis.releaseSubnet(name);
    return send(res, 200, Status(200, "", "deleted"));
  }

  private create(res: http.ServerResponse, kind: Kind, object: Record<string, any>): void {
    const problems = kind === "resourcequotas" ? ["the fake does not create quotas"] : validateObject(object);
    if (problems.length > 0)
      return send(res, 422, Status(422, "Invalid", `${object?.kind} is invalid`, { causes: problems.map((message) => ({ message })) }));
    const objectName = object.metadata.name as string;
    if (this.store.has(kind, objectName))
      return send(res, 409, Status(409, "AlreadyExists", `${kind} "${objectName}" already exists`, { name: objectName, kind }));
    object.metadata = {
      ...object.metadata,
      namespace: this.options.namespace,
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString(),
    };
    if (kind === "secrets" && object.stringData) {
      object.data = Object.fromEntries(
        Object.entries(object.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
      );
    }
    if (kind === "services") {
      const subnet = this.vmis.takeSubnet(objectName);
      if (subnet === undefined) return send(res, 500, Status(500, "InternalError", "fake: no subnet left for a Service address"));
      // The address a one-host netns set on this subnet gets (netns-hosts.ts: 10.213.S.2).
      object.spec = { ...object.spec, clusterIP: `10.213.${subnet}.2`, clusterIPs: [`10.213.${subnet}.2`] };
    }
    if (kind === "datavolumes") object.status = { phase: "Succeeded", progress: "100.0%" };
    this.store.put(kind, object, "ADDED");
    return send(res, 201, object);
  }

  private groupServed(group: string): boolean {
    const { serves } = this;
    return (
      (group !== SERVED_GROUPS.kubevirt || serves.kubevirt) &&
      (group !== SERVED_GROUPS.cdi || serves.cdi) &&
      (group !== SERVED_GROUPS.multus || serves.multus)
    );
  }

  private forbidden(verb: string, resource: string, group: string, namespace: string) {
    return Status(
      403,
      "Forbidden",
      `${resource}${group ? `.${group}` : ""} is forbidden: User "system:serviceaccount:${this.options.namespace}:labdeck" cannot ${verb} resource "${resource}" in API group "${group}" in the namespace "${namespace}"`,
      { kind: resource },
    );
  }
}

export async function startFakeKubeApi(options: FakeKubeApiOptions): Promise<FakeKubeApi> {
  const token = randomBytes(16).toString("hex");
  const store = new ObjectStore();
  const vmis = new FakeVmis(store, options);
  const handler = new FakeKubeHandler(options, token, store, vmis);
  const requests: FakeKubeApi["requests"] = [];

  const server = http.createServer((req, res) => {
    const started = performance.now();
    const url = new URL(req.url ?? "/", "http://fake");
    res.on("finish", () =>
      requests.push({ method: req.method ?? "", path: url.pathname, status: res.statusCode, ms: performance.now() - started }),
    );
    void handler.handle(req, res, url).catch((error: Error) => {
      log.warn({ err: error.message }, "fake kube api: handler failed");
      if (!res.headersSent) send(res, 500, Status(500, "InternalError", error.message));
    });
  });
  const sockets = new Set<net.Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const kubeconfig = await writeKubeconfig(options, url, token);

  return {
    url,
    kubeconfig,
    requests,
    bootMs: vmis.bootMs,
    objects: (kind) => store.list(kind),
    async guestPowerOff(name) {
      await vmis.end(name, "Succeeded");
    },
    hostOf: (name) => vmis.runs.get(name)?.hosts,
    async stop() {
      for (const w of store.watchers) w.res.end();
      await Promise.all([...vmis.runs.keys()].map((name) => vmis.end(name).catch(() => undefined)));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A kubeconfig file for the fake (bearer token, namespace) in the options' directory. */
async function writeKubeconfig(options: FakeKubeApiOptions, url: string, token: string): Promise<string> {
  await fs.mkdir(options.dir, { recursive: true });
  const kubeconfig = path.join(options.dir, "kubeconfig");
  await fs.writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      // @kubernetes/client-node refuses a plain-HTTP server unless TLS checks are marked as skipped.
      clusters: [{ name: "fake", cluster: { server: url, "insecure-skip-tls-verify": true } }],
      users: [{ name: "labdeck", user: { token } }],
      contexts: [{ name: "fake", context: { cluster: "fake", user: "labdeck", namespace: options.namespace } }],
      "current-context": "fake",
    }),
    { mode: 0o600 },
  );
  return kubeconfig;
}

function notServed(res: http.ServerResponse): void {
  res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
  res.end("404 page not found\n");
}

function notFound(kind: string, group: string, name: string) {
  return Status(404, "NotFound", `${kind}${group ? `.${group}` : ""} "${name}" not found`, { name, kind });
}

function parseSelector(text: string | null): Record<string, string> {
  if (!text) return {};
  return Object.fromEntries(
    text.split(",").map((part) => {
      const [k, v] = part.split("=");
      if (!k || v === undefined) throw new Error(`fake: only equality selectors (got ${text})`);
      return [k, v];
    }),
  );
}

function matches(object: Record<string, any>, selector: Record<string, string>): boolean {
  const labels = (object.metadata?.labels ?? {}) as Record<string, string>;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}
