import path from "node:path";
import { z } from "zod";
import { canonicalTimeZone, DEFAULT_TIME_ZONE } from "./i18n/time-zone";

/** An IANA time zone name, in its canonical spelling ("asia/tokyo" -> "Asia/Tokyo"). */
const TimeZoneName = z
  .string()
  .trim()
  .transform((name, ctx) => {
    const zone = canonicalTimeZone(name);
    if (zone) return zone;
    ctx.addIssue({ code: "custom", message: `"${name}" is not an IANA time zone name (e.g. Asia/Tokyo, Europe/Berlin, UTC)` });
    return z.NEVER;
  });

/**
 * Environment the server reads, parsed once at start. A bad value stops start-up with a message
 * naming the variable; nothing else in the server reads process.env directly.
 */
export const Env = z.object({
  /** External PostgreSQL. Unset: the server starts an embedded PostgreSQL under LABDECK_DATA_DIR. */
  DATABASE_URL: z.string().url().optional(),
  /**
   * Where embedded PostgreSQL, secrets and machine state live. As root the default is
   * /var/lib/labdeck: embedded PostgreSQL then runs as user "postgres", which cannot enter
   * a project under /root.
   */
  LABDECK_DATA_DIR: z
    .string()
    .min(1)
    .default(process.getuid?.() === 0 ? "/var/lib/labdeck" : path.resolve(".labdeck")),
  /** TCP port of the embedded PostgreSQL (loopback only). */
  LABDECK_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** JSON file listing static hosts (see server/machines/static-hosts.ts). */
  LABDECK_HOSTS_FILE: z.string().min(1).optional(),
  /**
   * Where lab machines come from: local QEMU VMs, or the static hosts file. Default: static when
   * LABDECK_HOSTS_FILE is set, else qemu. `netns-demo`: the hosts file lists sshd hosts in network
   * namespaces of this machine (`"demo": true`), where every learner is root on the server's host:
   * a single-user demo or a test, never for learners; the server refuses such a file otherwise.
   * `kubevirt`: VMs on a Kubernetes cluster with KubeVirt (LABDECK_KUBE* and LABDECK_KUBEVIRT_* below).
   */
  LABDECK_MACHINES: z.enum(["qemu", "static", "netns-demo", "kubevirt"]).optional(),
  /**
   * kubevirt (LABDECK_MACHINES=kubevirt, server/machines/kubevirt/): a kubeconfig file for the
   * cluster whose KubeVirt runs the lab VMs; unset: the pod's own service account (in-cluster).
   */
  LABDECK_KUBECONFIG: z.string().min(1).optional(),
  /** kubevirt: the kubeconfig context; unset: its current context. */
  LABDECK_KUBE_CONTEXT: z.string().min(1).optional(),
  /** Set by Kubernetes in every pod: the API server's address (the in-cluster configuration). */
  KUBERNETES_SERVICE_HOST: z.string().min(1).optional(),
  KUBERNETES_SERVICE_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** kubevirt: the namespace of the lab VMs (its ResourceQuota is Labdeck's capacity); unset: the kubeconfig context's, or the pod's own. */
  LABDECK_KUBEVIRT_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a namespace name (DNS-1123 label)")
    .optional(),
  /** kubevirt: registry path of the containerDisk images (`image build --format containerdisk`), pulled as <repository>/<variant>:<hash>. */
  LABDECK_KUBEVIRT_IMAGE_REPOSITORY: z
    .string()
    .regex(/^[a-z0-9.-]+(:\d+)?(\/[a-z0-9._-]+)*$/, "must be a registry path such as registry.example.com/labdeck")
    .optional(),
  /** kubevirt: StorageClass of the golden PVCs and the VMs' root disks (one with CSI clones makes starts fast); unset: the cluster's default. */
  LABDECK_KUBEVIRT_STORAGE_CLASS: z.string().min(1).optional(),
  /** kubevirt: vCPUs per requested CPU (4: a vCPU requests 250m); 1 reserves a whole core per vCPU. */
  LABDECK_KUBEVIRT_CPU_OVERCOMMIT: z.coerce.number().min(1).max(20).default(4),
  /** kubevirt: guest RAM per requested RAM (1.5: a 2 GiB guest requests 1,366 MiB); 1 = no memory overcommit. */
  LABDECK_KUBEVIRT_MEMORY_OVERCOMMIT: z.coerce.number().min(1).max(4).default(1),
  /** kubevirt: labels of Labdeck's own pods, the only ones the NetworkPolicy lets reach a VM's SSH (comma-separated key=value). */
  LABDECK_KUBEVIRT_PLATFORM_LABELS: z
    .string()
    .default("app.kubernetes.io/name=labdeck")
    .transform((v, ctx) => {
      const pairs = v
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean)
        .map((p) => p.split("="));
      if (pairs.length === 0 || pairs.some((p) => p.length !== 2 || !p[0] || !p[1])) {
        ctx.addIssue({ code: "custom", message: "must be comma-separated key=value labels" });
        return z.NEVER;
      }
      return Object.fromEntries(pairs) as Record<string, string>;
    }),
  /** kubevirt: the resolver internet labs' VMs use (the cluster DNS Service address, e.g. 10.96.0.10); unset: no DNS in the VMs. */
  LABDECK_KUBEVIRT_GUEST_DNS: z.ipv4().optional(),
  /** kubevirt: more CIDRs internet labs may not reach (the cluster's pod and service ranges if outside 10/8, 172.16/12, 192.168/16, 100.64/10). */
  LABDECK_KUBEVIRT_INTERNET_EXCEPT: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((c) => c.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.cidrv4({ message: "must be comma-separated IPv4 CIDRs" }))),
  /** kubevirt: longest a VM may take from create to answering SSH (disk clone, image pull, boot), seconds. */
  LABDECK_KUBEVIRT_BOOT_TIMEOUT_S: z.coerce.number().int().min(30).max(3600).default(600),
  /** Booted 3-machine sets kept ready for learners (QEMU, kubevirt), any lab's setup still to run; 0: none. */
  LABDECK_POOL_SIZE: z.coerce.number().int().min(0).max(50).default(1),
  /**
   * Labs whose warm sets are prepared ahead (their setup run: a start hands them out with nothing
   * left to do), as `slug:reserve[:initial[:cap]]`, comma-separated, e.g. `preinstall-checks:2`.
   * Written as the labs' pool targets at start where an admin has not set one on /admin/capacity.
   */
  LABDECK_POOL_LABS: z
    .string()
    .default("")
    .transform((value, ctx) => {
      const targets: { labSlug: string; reserve: number; initial: number; cap: number | null }[] = [];
      for (const part of value
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean)) {
        const match = /^([a-z0-9][a-z0-9-]{0,62}):(\d{1,2})(?::(\d{1,3}))?(?::(\d{1,4}))?$/.exec(part);
        if (!match) {
          ctx.addIssue({ code: "custom", message: `"${part}" is not slug:reserve[:initial[:cap]] (e.g. preinstall-checks:2)` });
          return z.NEVER;
        }
        const reserve = Number(match[2]);
        targets.push({
          labSlug: match[1]!,
          reserve,
          initial: match[3] ? Number(match[3]) : reserve,
          cap: match[4] ? Number(match[4]) : null,
        });
      }
      return targets;
    }),
  /** Guest RAM per lab VM, MiB, for every image variant; unset: each variant's own size (recipe.ts `machine`). */
  LABDECK_VM_MEMORY_MIB: z.coerce.number().int().min(256).max(16384).optional(),
  /** A lab session's time limit, minutes from when its machines are ready; then they are released. */
  LABDECK_SESSION_MINUTES: z.coerce
    .number()
    .int()
    .min(5)
    .max(7 * 24 * 60)
    .default(240),
  /** Minutes without terminal input or checks after which a session's machines are powered off (resumed on the next visit); 0: never. */
  LABDECK_IDLE_MINUTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 60)
    .default(30),
  /** Debian mirror for image builds; unset: the host's own apt source, else deb.debian.org. */
  LABDECK_DEBIAN_MIRROR: z.string().url().optional(),
  /** QEMU accelerator: auto decides by a real timed KVM boot at start (never by /dev/kvm alone). */
  LABDECK_QEMU_ACCEL: z.enum(["auto", "kvm", "tcg"]).default("auto"),
  /** Where lab content lives. */
  LABDECK_LABS_DIR: z.string().min(1).default(path.resolve("labs")),
  /** Token signing secret shared by replicas; unset: generated into LABDECK_DATA_DIR. */
  LABDECK_SECRET: z.string().min(32).optional(),
  /** Public URL printed at start (behind a proxy); unset: http://HOST:PORT. */
  LABDECK_PUBLIC_URL: z.string().url().optional(),
  /**
   * Reverse proxies whose X-Forwarded-For is believed (comma-separated IP addresses); unset: the
   * header is ignored and the peer address is the client (sign-in throttling keys by it).
   */
  LABDECK_TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((a) => a.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.union([z.ipv4(), z.ipv6()], { message: "must be a comma-separated list of IP addresses" }))),
  /** Email of the admin created on a first start (database without any admin). */
  LABDECK_ADMIN_EMAIL: z.string().trim().toLowerCase().email().default("admin@labdeck.local"),
  /** Database connections per server process (each replica has its own pool). */
  LABDECK_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
  /** How often the grader checks each live session's current step, ms. */
  LABDECK_GRADER_INTERVAL_MS: z.coerce.number().int().min(200).max(600_000).default(2_000),
  /** Longest wait between polls of a step that keeps failing while the learner types nothing, ms (Enter checks at once); 0: every interval. */
  LABDECK_GRADER_QUIET_MAX_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /** Checks running at once per process (each is one SSH exec). */
  LABDECK_GRADER_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(16),
  /** Check history (CheckRun rows) whose newest run is older than this many days is pruned hourly; 0 keeps it forever. */
  LABDECK_CHECK_RETENTION_DAYS: z.coerce.number().int().min(0).max(3_650).default(30),
  /**
   * On SIGTERM: how long running checks may take to finish and be recorded before the process
   * exits anyway, ms (their claims then lapse and another process runs them).
   */
  LABDECK_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).max(120_000).default(10_000),
  /** /readyz fails when the grader's oldest overdue check is later than this, ms. */
  LABDECK_READY_MAX_GRADER_LAG_MS: z.coerce.number().int().min(1_000).default(30_000),
  /** Bearer token for GET /metrics on the public port; unset: /metrics only on LABDECK_METRICS_PORT. */
  LABDECK_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** A separate listener for /metrics (and /healthz, /readyz) without a token, on LABDECK_METRICS_HOST. */
  LABDECK_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  LABDECK_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  /** The platform's time zone: every time the UI shows and every date input is in it (dates are stored in UTC). */
  LABDECK_TIME_ZONE: TimeZoneName.default(DEFAULT_TIME_ZONE),
  /** Days a terminal recording is kept after it started; older ones are deleted (hourly). */
  LABDECK_RECORDING_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** Terminal output recorded per lab session over all its machines, bytes; beyond it the recording stops (marked truncated). */
  LABDECK_RECORDING_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(2 ** 31 - 1)
    .default(64 * 1024 * 1024),
  /**
   * Web preview (server/preview/): where a lab machine's web service is shown, as
   * `<scheme>://<label>.<host>[:port]` — one origin per (lab session, machine, port), so a lab's
   * pages never share an origin (or cookies) with Labdeck. Give a base under a registrable domain
   * of its own (e.g. https://preview.labs-usercontent.example), with a wildcard DNS record and
   * certificate for `*.<host>` pointing at Labdeck: a page under Labdeck's own domain could set
   * cookies for it. Unset: http://preview.localhost on Labdeck's own port (Chromium and curl
   * resolve `*.localhost` to loopback).
   */
  LABDECK_PREVIEW_URL: z
    .string()
    .url()
    .refine(
      (v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol) && new URL(v).pathname === "/",
      "must be http(s)://host[:port] without a path",
    )
    .optional(),
  /** pino's level for the process log (server/log.ts). */
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
});
export type Env = z.infer<typeof Env>;

export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const result = Env.safeParse(source);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid environment: ${issues.join("; ")}; fix it (see "Configuration" in README.md)`);
  }
  return result.data;
}

/** The URL people open: LABDECK_PUBLIC_URL, else http://HOST:PORT (links, cookies, allowed origin). */
export function publicUrl(env: Env, port: number = env.PORT): string {
  return (env.LABDECK_PUBLIC_URL ?? `http://${env.HOST}:${port}`).replace(/\/+$/, "");
}

/**
 * The web preview's base (LABDECK_PREVIEW_URL, else http://preview.localhost on Labdeck's port):
 * the scheme, the host every preview label goes in front of, and the port (empty: the scheme's).
 */
export function previewBase(env: Env, port: number = env.PORT): { scheme: "http" | "https"; host: string; port: string } {
  const url = new URL(env.LABDECK_PREVIEW_URL ?? `http://preview.localhost:${new URL(publicUrl(env, port)).port || port}`);
  return { scheme: url.protocol === "https:" ? "https" : "http", host: url.hostname.toLowerCase(), port: url.port };
}

/**
 * The platform time zone for Next.js pages (i18n/request.ts). Like labsDirFromEnv it reads only
 * its own variable, so a page does not depend on unrelated ones; server.ts has already refused
 * to start with a bad value.
 */
export function timeZoneFromEnv(source: Record<string, string | undefined> = process.env): string {
  return Env.shape.LABDECK_TIME_ZONE.parse(source.LABDECK_TIME_ZONE);
}

/**
 * The log level for server/log.ts, which is made at import time (before parseEnv runs): like
 * timeZoneFromEnv it reads only its own variable; a bad value falls back to "info" here and
 * server.ts's parseEnv then refuses to start with a message naming LOG_LEVEL.
 */
export function logLevelFromEnv(source: Record<string, string | undefined> = process.env): Env["LOG_LEVEL"] {
  const parsed = Env.shape.LOG_LEVEL.safeParse(source.LOG_LEVEL);
  return parsed.success ? parsed.data : "info";
}
