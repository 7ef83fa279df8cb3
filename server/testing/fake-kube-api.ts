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

interface Runtime {
  vmi: Record<string, any>;
  hosts?: NetnsHostSet;
  booting?: Promise<void>;
  subnet: number;
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

export async function startFakeKubeApi(options: FakeKubeApiOptions): Promise<FakeKubeApi> {
  const token = randomBytes(16).toString("hex");
  const ns = options.namespace;
  const store = new Map<string, Stored>(); // "<kind>/<name>"
  const runtimes = new Map<string, Runtime>(); // VM name → its current VMI
  const serviceSubnets = new Map<string, number>(); // Service name → subnet
  const free = [...options.subnets];
  const history: { rv: number; type: string; kind: Kind; object: Record<string, any> }[] = [];
  const watchers = new Set<{ kind: Kind; selector: Record<string, string>; res: http.ServerResponse }>();
  const requests: FakeKubeApi["requests"] = [];
  const bootMs: number[] = [];
  let rv = 1;
  const serves = { kubevirt: true, cdi: true, multus: true, ...options.serves };
  const deny = new Set(options.deny ?? []);

  const key = (kind: Kind, name: string) => `${kind}/${name}`;
  const emit = (type: string, kind: Kind, object: Record<string, any>) => {
    object.metadata.resourceVersion = String(++rv);
    history.push({ rv, type, kind, object: structuredClone(object) });
    for (const w of watchers) if (w.kind === kind && matches(object, w.selector)) w.res.write(JSON.stringify({ type, object }) + "\n");
  };
  const put = (kind: Kind, object: Record<string, any>, type: "ADDED" | "MODIFIED") => {
    store.set(key(kind, object.metadata.name), { kind, object });
    emit(type, kind, object);
  };
  const remove = (kind: Kind, name: string) => {
    const stored = store.get(key(kind, name));
    if (!stored) return;
    store.delete(key(kind, name));
    emit("DELETED", kind, stored.object);
  };

  // ---- VMIs: real netns hosts ---------------------------------------------------------------

  const vmiStatus = (runtime: Runtime, patch: Record<string, unknown>) => {
    runtime.vmi.status = { ...runtime.vmi.status, ...patch };
    if (store.has(key("virtualmachineinstances", runtime.vmi.metadata.name))) put("virtualmachineinstances", runtime.vmi, "MODIFIED");
  };

  const podRequests = (vm: Record<string, any>) => {
    const domain = vm.spec.template.spec.domain;
    const memory = parseQuantity(domain.resources.requests.memory) / 2 ** 20;
    const cores = domain.cpu.cores as number;
    // As KubeVirt renders virt-launcher's requests: the VM's plus its overhead (sizing.ts cites the formula).
    return {
      cpu: parseQuantity(domain.resources.requests.cpu),
      memoryMiB: memory + launcherOverheadMiB({ cores, memoryMiB: parseQuantity(domain.memory.guest) / 2 ** 20 }),
    };
  };
  const quotaUsed = () => {
    let cpu = 0;
    let memoryMiB = 0;
    let pods = 0;
    for (const runtime of runtimes.values()) {
      if (!runtime.hosts && !runtime.booting) continue;
      const vm = store.get(key("virtualmachines", runtime.vmi.metadata.name))?.object;
      if (!vm) continue;
      const r = podRequests(vm);
      cpu += r.cpu;
      memoryMiB += r.memoryMiB;
      pods++;
    }
    return { cpu, memoryMiB, pods };
  };

  const startVmi = (vm: Record<string, any>): Runtime => {
    const name = vm.metadata.name as string;
    const subnet = serviceSubnets.get(name);
    const vmi = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: {
        name,
        namespace: ns,
        uid: randomUUID(),
        labels: { ...vm.spec.template.metadata?.labels },
        annotations: { ...vm.metadata.annotations },
        creationTimestamp: new Date().toISOString(),
      },
      status: { phase: "Scheduling", conditions: [] as unknown[] },
    };
    const runtime: Runtime = { vmi, subnet: subnet ?? -1 };
    runtimes.set(name, runtime);
    put("virtualmachineinstances", vmi, "ADDED");
    runtime.booting = (async () => {
      // Quota admission of the virt-launcher pod.
      if (options.quota) {
        // This VMI is not counted yet (its boot has not been registered): used + its own.
        const used = quotaUsed();
        const own = podRequests(vm);
        const hard = options.quota;
        const over =
          (hard["requests.memory"] !== undefined && (used.memoryMiB + own.memoryMiB) * 2 ** 20 > parseQuantity(hard["requests.memory"])) ||
          (hard["requests.cpu"] !== undefined && used.cpu + own.cpu > parseQuantity(hard["requests.cpu"]) + 1e-9) ||
          (hard.pods !== undefined && used.pods + 1 > parseQuantity(hard.pods));
        if (over) {
          runtime.booting = undefined;
          vmiStatus(runtime, {
            phase: "Pending",
            conditions: [
              {
                type: "Synchronized",
                status: "False",
                reason: "FailedCreate",
                message: `failed to create virtual machine pod: pods "virt-launcher-${name}-x" is forbidden: exceeded quota: labdeck, requested: requests.memory=${Math.ceil(own.memoryMiB)}Mi, used: requests.memory=${Math.ceil(used.memoryMiB)}Mi, limited: requests.memory=${hard["requests.memory"] ?? "-"}`,
              },
            ],
          });
          return;
        }
      }
      if (subnet === undefined) throw new Error(`fake: VM ${name} has no Service, so no address (the provider makes one per VM)`);
      const identity = await cloudInitOf(vm);
      vmiStatus(runtime, { phase: "Scheduled", nodeName: NODE_NAME });
      const started = Date.now();
      const hosts = await createNetnsHosts({
        id: `k${subnet}`,
        names: [identity.hostname],
        subnet,
        dir: path.join(options.dir, name),
        hostKeys: { [identity.hostname]: identity.hostKey },
        authorizedKeys: identity.authorizedKeys,
      });
      bootMs.push(Date.now() - started);
      if (runtimes.get(name) !== runtime) return void (await hosts.destroy());
      runtime.hosts = hosts;
      vmiStatus(runtime, { phase: "Running", interfaces: [{ name: "default", ipAddress: hosts.hosts[0]!.host }] });
    })()
      .catch((error: Error) => {
        log.warn({ err: error.message, vm: name }, "fake kube api: VMI failed");
        vmiStatus(runtime, {
          phase: "Failed",
          conditions: [{ type: "Ready", status: "False", reason: "FakeBootFailed", message: error.message }],
        });
      })
      .finally(() => {
        runtime.booting = undefined;
      });
    return runtime;
  };

  /** Ends a VMI's machine; `phase` keeps the VMI as ended (a guest poweroff), none deletes it (a stop). */
  const endVmi = async (name: string, phase?: "Succeeded"): Promise<void> => {
    const runtime = runtimes.get(name);
    if (!runtime) return;
    await runtime.booting;
    const hosts = runtime.hosts;
    runtime.hosts = undefined;
    await hosts?.destroy();
    if (phase) vmiStatus(runtime, { phase });
    else {
      runtimes.delete(name);
      remove("virtualmachineinstances", name);
    }
  };

  const cloudInitOf = async (vm: Record<string, any>) => {
    const volume = (vm.spec.template.spec.volumes as any[]).find((v) => v.cloudInitNoCloud);
    const secret = store.get(key("secrets", volume?.cloudInitNoCloud?.secretRef?.name ?? ""))?.object;
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
  };

  // ---- HTTP ---------------------------------------------------------------------------------

  const server = http.createServer((req, res) => {
    const started = performance.now();
    const url = new URL(req.url ?? "/", "http://fake");
    res.on("finish", () =>
      requests.push({ method: req.method ?? "", path: url.pathname, status: res.statusCode, ms: performance.now() - started }),
    );
    void handle(req, res, url).catch((error: Error) => {
      log.warn({ err: error.message }, "fake kube api: handler failed");
      if (!res.headersSent) send(res, 500, Status(500, "InternalError", error.message));
    });
  });

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, Status(401, "Unauthorized", "Unauthorized"));
    const body = await readJson(req);
    const p = url.pathname;
    // Discovery.
    const discovery = /^\/apis\/([^/]+)\/([^/]+)$/.exec(p);
    if (discovery && req.method === "GET") {
      if (!groupServed(discovery[1]!)) return notServed(res);
      return send(res, 200, { kind: "APIResourceList", groupVersion: `${discovery[1]}/${discovery[2]}`, resources: [] });
    }
    if (p === "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && req.method === "POST") {
      const a = (body as any)?.spec?.resourceAttributes ?? {};
      const resource = `${a.resource}${a.subresource ? `/${a.subresource}` : ""}${a.group ? `.${a.group}` : ""}`;
      return send(res, 201, { ...(body as object), status: { allowed: !deny.has(`${a.verb} ${resource}`) } });
    }
    const sub = /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([^/]+)\/virtualmachines\/([^/]+)\/(start|stop|restart)$/.exec(p);
    if (sub) {
      if (!serves.kubevirt) return notServed(res);
      if (sub[1] !== ns) return send(res, 403, forbidden("update", `virtualmachines/${sub[3]}`, "subresources.kubevirt.io", sub[1]!));
      if (deny.has(`update virtualmachines/${sub[3]}.subresources.kubevirt.io`))
        return send(res, 403, forbidden("update", `virtualmachines/${sub[3]}`, "subresources.kubevirt.io", ns));
      return vmAction(res, decodeURIComponent(sub[2]!), sub[3] as "start" | "stop" | "restart", body);
    }
    const m = /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(p);
    if (!m) return notServed(res);
    const group = m[1] ?? "";
    const kind = m[4] as Kind;
    if (group && !groupServed(group)) return notServed(res);
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
    if (m[3] !== ns || deny.has(`${verb} ${kind}${group ? `.${group}` : ""}`)) return send(res, 403, forbidden(verb, kind, group, m[3]!));
    const selector = parseSelector(url.searchParams.get("labelSelector"));

    if (kind === "resourcequotas" && verb === "list") {
      const used = quotaUsed();
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
        ? [{ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "labdeck", namespace: ns }, spec: { hard: options.quota }, status }]
        : [];
      return send(res, 200, { kind: "ResourceQuotaList", apiVersion: "v1", metadata: { resourceVersion: String(rv) }, items });
    }
    if (verb === "watch") {
      const since = Number(url.searchParams.get("resourceVersion") ?? rv);
      res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
      for (const event of history)
        if (event.rv > since && event.kind === kind && matches(event.object, selector))
          res.write(JSON.stringify({ type: event.type, object: event.object }) + "\n");
      const watcher = { kind, selector, res };
      watchers.add(watcher);
      const timer = options.watchTimeoutMs ? setTimeout(() => res.end(), options.watchTimeoutMs) : undefined;
      req.on("close", () => {
        clearTimeout(timer);
        watchers.delete(watcher);
      });
      return;
    }
    if (verb === "list") {
      const items = [...store.values()].filter((s) => s.kind === kind && matches(s.object, selector)).map((s) => s.object);
      return send(res, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(rv) }, items });
    }
    if (verb === "get") {
      const stored = store.get(key(kind, name!));
      return stored ? send(res, 200, stored.object) : send(res, 404, notFound(kind, group, name!));
    }
    if (verb === "delete") {
      const stored = store.get(key(kind, name!));
      if (!stored) return send(res, 404, notFound(kind, group, name!));
      if (kind === "virtualmachineinstances")
        return send(res, 405, Status(405, "MethodNotAllowed", "the fake does not delete VMIs directly"));
      if (kind === "virtualmachines") {
        stored.object.metadata.deletionTimestamp = new Date().toISOString();
        put(kind, stored.object, "MODIFIED");
        // Dependents first (the VMI, the root disk), then the VM, as with propagationPolicy Foreground.
        void endVmi(name!).then(() => remove(kind, name!));
        return send(res, 200, stored.object);
      }
      remove(kind, name!);
      if (kind === "services") {
        const subnet = serviceSubnets.get(name!);
        serviceSubnets.delete(name!);
        if (subnet !== undefined) free.push(subnet);
      }
      return send(res, 200, Status(200, "", "deleted"));
    }
    // create
    const object = body as Record<string, any>;
    const problems = kind === "resourcequotas" ? ["the fake does not create quotas"] : validateObject(object);
    if (problems.length > 0)
      return send(res, 422, Status(422, "Invalid", `${object?.kind} is invalid`, { causes: problems.map((message) => ({ message })) }));
    const objectName = object.metadata.name as string;
    if (store.has(key(kind, objectName)))
      return send(res, 409, Status(409, "AlreadyExists", `${kind} "${objectName}" already exists`, { name: objectName, kind }));
    object.metadata = { ...object.metadata, namespace: ns, uid: randomUUID(), creationTimestamp: new Date().toISOString() };
    if (kind === "secrets" && object.stringData) {
      object.data = Object.fromEntries(
        Object.entries(object.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
      );
    }
    if (kind === "services") {
      const subnet = free.shift();
      if (subnet === undefined) return send(res, 500, Status(500, "InternalError", "fake: no subnet left for a Service address"));
      serviceSubnets.set(objectName, subnet);
      // The address a one-host netns set on this subnet gets (netns-hosts.ts: 10.213.S.2).
      object.spec = { ...object.spec, clusterIP: `10.213.${subnet}.2`, clusterIPs: [`10.213.${subnet}.2`] };
    }
    if (kind === "datavolumes") object.status = { phase: "Succeeded", progress: "100.0%" };
    put(kind, object, "ADDED");
    return send(res, 201, object);
  };

  const vmAction = async (res: http.ServerResponse, name: string, action: "start" | "stop" | "restart", body: unknown): Promise<void> => {
    const vm = store.get(key("virtualmachines", name))?.object;
    if (!vm) return send(res, 404, notFound("virtualmachines", "kubevirt.io", name));
    const runtime = runtimes.get(name);
    const active = runtime !== undefined && !["Succeeded", "Failed"].includes(runtime.vmi.status?.phase);
    if (action === "start") {
      if (active) return send(res, 409, Status(409, "Conflict", `VM ${name} is already running`));
      if (runtime) await endVmi(name); // a final VMI is replaced
      startVmi(vm);
      return send(res, 202, {});
    }
    if (!active) return send(res, 409, Status(409, "Conflict", `VM ${name} is not running`));
    if (action === "stop") {
      send(res, 202, {});
      await endVmi(name);
      return;
    }
    // restart: the VMI goes (grace as asked: the fake always ends it at once) and a new one starts.
    z.looseObject({ gracePeriodSeconds: z.number().int().min(0).optional() }).parse(body ?? {});
    send(res, 202, {});
    await endVmi(name);
    startVmi(vm);
  };

  const groupServed = (group: string) =>
    (group !== SERVED_GROUPS.kubevirt || serves.kubevirt) &&
    (group !== SERVED_GROUPS.cdi || serves.cdi) &&
    (group !== SERVED_GROUPS.multus || serves.multus);
  const notServed = (res: http.ServerResponse) => {
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
    res.end("404 page not found\n");
  };
  const forbidden = (verb: string, resource: string, group: string, namespace: string) =>
    Status(
      403,
      "Forbidden",
      `${resource}${group ? `.${group}` : ""} is forbidden: User "system:serviceaccount:${ns}:labdeck" cannot ${verb} resource "${resource}" in API group "${group}" in the namespace "${namespace}"`,
      { kind: resource },
    );
  const notFound = (kind: string, group: string, name: string) =>
    Status(404, "NotFound", `${kind}${group ? `.${group}` : ""} "${name}" not found`, { name, kind });

  const sockets = new Set<net.Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
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
      contexts: [{ name: "fake", context: { cluster: "fake", user: "labdeck", namespace: ns } }],
      "current-context": "fake",
    }),
    { mode: 0o600 },
  );

  return {
    url,
    kubeconfig,
    requests,
    bootMs,
    objects: (kind) => [...store.values()].filter((s) => s.kind === kind).map((s) => s.object),
    async guestPowerOff(name) {
      await endVmi(name, "Succeeded");
    },
    hostOf: (name) => runtimes.get(name)?.hosts,
    async stop() {
      for (const w of watchers) w.res.end();
      await Promise.all([...runtimes.keys()].map((name) => endVmi(name).catch(() => undefined)));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
