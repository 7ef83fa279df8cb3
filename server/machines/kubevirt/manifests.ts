/**
 * The Kubernetes objects of a machine set on the fleet, as pure functions of the set (golden
 * tested per lab and variant, manifests.test.ts). A machine set is what the provider made for one
 * request: its id is the request's `sessionId` (a lab session's id, or a warm pool's `pool-…` id
 * it keeps after the hand-out); "set" names it in every file of this provider, "session" means
 * only the learner's lab session. The objects' label and annotation keys keep the word
 * (labdeck.io/session, labdeck.io/session-id): objects made by earlier versions are found by them.
 * Per set:
 *
 *   NetworkAttachmentDefinition ld-<key>-eth1   eth1: a Linux bridge of the set's own on the
 *                                               node (bridge CNI, no uplink, no IPAM)
 *   NetworkPolicy               ld-<key>        eth0: in only from Labdeck's pods on TCP 22; out
 *                                               nothing, or (internet labs) the internet without
 *                                               private, link-local and shared ranges, plus DNS
 * and per machine, all named ld-<key>-<machine>:
 *   Secret                      cloud-init user data and network data (cloud-init.ts)
 *   Service                     a stable address for SSH: the VMI's pod (and pod IP) changes with
 *                               every restart, reset and resume
 *   VirtualMachine              its root disk a CDI clone of the variant's golden PVC
 *                               (dataVolumeTemplates), kernel and initrd from the variant's
 *                               containerDisk image (kernelBoot), runStrategy Manual
 *
 * The set's VMs share a node (required pod affinity on the set label): the bridge exists only
 * there. Object names and label values are DNS-1123/1035 labels (≤ 63 characters).
 */
import { createHash } from "node:crypto";
import { networkData, userData } from "./cloud-init";
import { podRequests, sizeOf, vmRequests, type Overcommit } from "./sizing";

export const LABEL_MANAGED_BY = "app.kubernetes.io/managed-by";
export const MANAGED_BY = "labdeck";
export const LABEL_COMPONENT = "app.kubernetes.io/component";
/** The set's key (setKey) on every object of the set. */
export const LABEL_SET = "labdeck.io/session";
export const LABEL_MACHINE = "labdeck.io/machine";
export const LABEL_LAB = "labdeck.io/lab";
export const LABEL_VARIANT = "labdeck.io/variant";
/** The set id in full (a label value holds only a key derived from it). */
export const ANNOTATION_SET_ID = "labdeck.io/session-id";
/** The VM's eth1 address and MAC, read back by adoption and by the fake API's hosts. */
export const ANNOTATION_ETH1 = "labdeck.io/eth1";

/** The set network: every set has the same addresses (its own bridge isolates it), as on QEMU. */
export const ETH1_NETWORK = "192.168.56";
export const ETH1_FIRST_HOST = 10;
export const ETH1_PREFIX = 24;
/**
 * The masquerade binding's guest network: KubeVirt gives the guest the second address of this
 * CIDR (10.0.2.2) and NATs it behind the pod's IP, so eth0 has the same address on every VM, as
 * the course requires (QEMU's slirp gives 10.0.2.15: the lessons that name it say so).
 */
export const POD_VM_NETWORK_CIDR = "10.0.2.0/24";
/** Where the containerDisk image keeps kernel and initrd (containerdisk.ts writes them there). */
export const KERNEL_PATH = "/boot/vmlinuz";
export const INITRD_PATH = "/boot/initrd.img";
/** Port the VM's Service and the masquerade binding forward: SSH, nothing else. */
export const SSH_PORT = 22;
/**
 * Grace of a stop (suspend): the guest gets an ACPI shutdown and this long before it is killed, in
 * seconds, as the QEMU provider's SUSPEND_SHUTDOWN_MS.
 */
export const STOP_GRACE_SECONDS = 60;

/**
 * Ranges an internet lab's VMs may not reach on eth0: RFC 1918, shared address space (RFC 6598),
 * link-local (cloud metadata), loopback and "this network"; the cluster's pod and service CIDRs
 * are inside 10/8 or 172.16/12 on most clusters, else the operator adds them (config.ts).
 */
export const INTERNET_EXCEPT = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];

export interface FleetSettings {
  namespace: string;
  /** Registry path of the containerDisk images: `<repository>/<variant>:<recipe hash>`. */
  imageRepository: string;
  /** StorageClass of the VMs' root disks (the golden PVCs' class, for CSI clones); none: the default. */
  storageClass?: string;
  overcommit: Overcommit;
  /** Labels of Labdeck's own pods: the only ones that may open SSH to a VM. */
  platformLabels: Record<string, string>;
  /** Extra CIDRs internet labs may not reach (the cluster's pod and service ranges when outside INTERNET_EXCEPT). */
  internetExcept?: readonly string[];
  /** The guest resolver of internet labs (cluster DNS service address); none: no DNS. */
  nameserver?: string;
}

export interface SetSpec {
  /** The set id (a learner's session id or a pool set's "pool-…"). */
  setId: string;
  labSlug: string;
  /** Image variant (recipe.ts), e.g. debian-base. */
  variant: string;
  /** Recipe hash of the variant: the containerDisk tag and the golden PVC's name. */
  imageHash: string;
  internet: boolean;
  /** In the lab's order; each with the host key Labdeck pins for it. */
  machines: readonly { name: string; hostPrivateKey: string; hostPublicKey: string }[];
  /** authorized_keys text: the platform's public key for the set. */
  authorizedKeys: string;
}

/** A Kubernetes object as written (apiVersion, kind, metadata, and the rest). */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface MachineObjects {
  name: string;
  eth1Address: string;
  secret: KubeObject;
  service: KubeObject;
  vm: KubeObject;
}

export interface SetObjects {
  network: KubeObject;
  policy: KubeObject;
  machines: MachineObjects[];
}

/**
 * The label value naming a set: the id itself when it is a short DNS label (cuids, pool ids),
 * else 16 hex digits of its sha256.
 */
export function setKey(setId: string): string {
  return /^[a-z0-9]([a-z0-9-]{0,23}[a-z0-9])?$/.test(setId) ? setId : sha256(setId).slice(0, 16);
}

export function vmName(setId: string, machine: string): string {
  return `ld-${setKey(setId)}-${machine}`;
}

export function networkName(setId: string): string {
  return `ld-${setKey(setId)}-eth1`;
}

export function policyName(setId: string): string {
  return `ld-${setKey(setId)}`;
}

/** The set's Linux bridge on its node: 15 characters at most (IFNAMSIZ). */
export function bridgeName(setId: string): string {
  return `ldb${sha256(setId).slice(0, 12)}`;
}

/** The golden PVC (a CDI DataVolume) of a variant's image; DNS labels have no dots. */
export function goldenName(variant: string, imageHash: string): string {
  return `labdeck-golden-${variant.replaceAll(".", "-")}-${imageHash}`;
}

export function imageReference(settings: Pick<FleetSettings, "imageRepository">, variant: string, imageHash: string): string {
  return `${settings.imageRepository.replace(/\/+$/, "")}/${variant}:${imageHash}`;
}

/** Labels of every object of a set. */
export function setLabels(spec: Pick<SetSpec, "setId" | "labSlug">): Record<string, string> {
  return {
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_COMPONENT]: "lab-machine",
    [LABEL_SET]: setKey(spec.setId),
    [LABEL_LAB]: labelValue(spec.labSlug),
  };
}

/** A label value from any text (a lab slug, "(warm pool)"): invalid characters become "-", ends trimmed, ≤ 63. */
export function labelValue(text: string): string {
  return text
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
}

/** Selects a set's objects (list, delete collection). */
export function setSelector(setId: string): string {
  return `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_SET}=${setKey(setId)}`;
}

/** Selects every lab machine object Labdeck made in the namespace (adoption after a restart). */
export const ALL_SETS_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_COMPONENT}=lab-machine`;

export function eth1Address(index: number): string {
  return `${ETH1_NETWORK}.${ETH1_FIRST_HOST + index}/${ETH1_PREFIX}`;
}

/** eth1's MAC: locally administered, from the set and machine, the same after every restart. */
export function eth1Mac(setId: string, machine: string): string {
  const bytes = sha256(`${setId}/${machine}/eth1`).slice(0, 10).match(/../g)!;
  return ["02", ...bytes].join(":");
}

/** systemd's machine id (kernel command line): distinct per VM, as kubeadm requires of nodes. */
export function machineId(setId: string, machine: string): string {
  return sha256(`${setId}/${machine}/machine-id`).slice(0, 32);
}

export function setObjects(settings: FleetSettings, spec: SetSpec): SetObjects {
  const meta = metaOf(settings, spec);
  const all = spec.machines.map((m, i) => ({ name: m.name, eth1Address: eth1Address(i) }));
  return {
    network: networkObject(spec, meta),
    policy: policyObject(settings, spec, meta),
    machines: spec.machines.map((m, i) => machineObjects(settings, spec, meta, all, m, all[i]!.eth1Address)),
  };
}

/** An object's metadata: the set's labels (and `extra`) and its id. */
type Meta = (name: string, extra?: Record<string, string>) => KubeObject["metadata"];

function metaOf(settings: FleetSettings, spec: SetSpec): Meta {
  const labels = setLabels(spec);
  const annotations = { [ANNOTATION_SET_ID]: spec.setId };
  return (name, extra = {}) => ({
    name,
    namespace: settings.namespace,
    labels: { ...labels, ...extra },
    annotations,
  });
}

function networkObject(spec: SetSpec, meta: Meta): KubeObject {
  return {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: meta(networkName(spec.setId)),
    spec: {
      // No IPAM: cloud-init sets the addresses (the course's 192.168.56.x); no uplink: the bridge
      // joins only this set's VMs on their node.
      config: JSON.stringify({
        cniVersion: "0.3.1",
        name: networkName(spec.setId),
        type: "bridge",
        bridge: bridgeName(spec.setId),
        ipam: {},
      }),
    },
  };
}

function policyObject(settings: FleetSettings, spec: SetSpec, meta: Meta): KubeObject {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: meta(policyName(spec.setId)),
    spec: {
      podSelector: { matchLabels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_SET]: setKey(spec.setId) } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [{ from: [{ podSelector: { matchLabels: settings.platformLabels } }], ports: [{ protocol: "TCP", port: SSH_PORT }] }],
      egress: spec.internet
        ? [
            { to: [{ ipBlock: { cidr: "0.0.0.0/0", except: [...INTERNET_EXCEPT, ...(settings.internetExcept ?? [])] } }] },
            {
              to: [
                {
                  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
                  podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
                },
              ],
              ports: [
                { protocol: "UDP", port: 53 },
                { protocol: "TCP", port: 53 },
              ],
            },
          ]
        : [],
    },
  };
}

/** One machine's Secret, Service and VirtualMachine. */
function machineObjects(
  settings: FleetSettings,
  spec: SetSpec,
  meta: Meta,
  all: { name: string; eth1Address: string }[],
  m: SetSpec["machines"][number],
  address: string,
): MachineObjects {
  const name = vmName(spec.setId, m.name);
  const mac = eth1Mac(spec.setId, m.name);
  const machineLabels = { [LABEL_MACHINE]: m.name, [LABEL_VARIANT]: spec.variant };
  const secret: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: meta(name, machineLabels),
    type: "Opaque",
    stringData: {
      userdata: userData({
        hostname: m.name,
        eth1Address: address,
        eth1Mac: mac,
        machines: all,
        hostPrivateKey: m.hostPrivateKey,
        hostPublicKey: m.hostPublicKey,
        authorizedKeys: spec.authorizedKeys,
        nameserver: spec.internet ? settings.nameserver : undefined,
      }),
      networkdata: networkData({ eth1Address: address, eth1Mac: mac }),
    },
  };
  const service: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(name, machineLabels),
    spec: {
      type: "ClusterIP",
      selector: { [LABEL_SET]: setKey(spec.setId), [LABEL_MACHINE]: m.name },
      ports: [{ name: "ssh", protocol: "TCP", port: SSH_PORT, targetPort: SSH_PORT }],
    },
  };
  const vm: KubeObject = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: meta(name, machineLabels),
    spec: vmSpec(settings, spec, { ...setLabels(spec), ...machineLabels }, name, m.name, mac),
  };
  return { name: m.name, eth1Address: address, secret, service, vm };
}

/**
 * A VirtualMachine's spec: its root disk cloned from the golden PVC, kernel boot, the set's bridge on
 * eth1. `labels` is copied where it is used: one object twice in a manifest would be a YAML alias.
 */
function vmSpec(settings: FleetSettings, spec: SetSpec, labels: Record<string, string>, name: string, machine: string, mac: string) {
  const rootDisk = `${name}-root`;
  return {
    // Nothing starts or restarts on its own: create, then the start subresource; a guest
    // poweroff stays off (health says stopped, the learner's start button calls reboot).
    runStrategy: "Manual",
    dataVolumeTemplates: [
      {
        metadata: { name: rootDisk, labels: { ...labels } },
        spec: {
          source: { pvc: { namespace: settings.namespace, name: goldenName(spec.variant, spec.imageHash) } },
          storage: {
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: `${sizeOf(spec.variant).diskGiB}Gi` } },
            ...(settings.storageClass ? { storageClassName: settings.storageClass } : {}),
          },
        },
      },
    ],
    template: {
      metadata: { labels: { ...labels } },
      spec: {
        domain: vmDomain(settings, spec, machine, mac),
        networks: [
          { name: "default", pod: { vmNetworkCIDR: POD_VM_NETWORK_CIDR } },
          { name: "session", multus: { networkName: networkName(spec.setId) } },
        ],
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                labelSelector: { matchLabels: { [LABEL_SET]: setKey(spec.setId) } },
                topologyKey: "kubernetes.io/hostname",
              },
            ],
          },
        },
        terminationGracePeriodSeconds: STOP_GRACE_SECONDS,
        volumes: [
          { name: "root", dataVolume: { name: rootDisk } },
          { name: "cloudinit", cloudInitNoCloud: { secretRef: { name }, networkDataSecretRef: { name } } },
        ],
      },
    },
  };
}

/** The guest: CPU and memory of the variant, kernel and initrd from its containerDisk image, its disks and NICs. */
function vmDomain(settings: FleetSettings, spec: SetSpec, machine: string, mac: string) {
  const size = sizeOf(spec.variant);
  const requests = vmRequests(size, settings.overcommit);
  const image = imageReference(settings, spec.variant, spec.imageHash);
  return {
    cpu: { cores: size.cores },
    memory: { guest: `${size.memoryMiB}Mi` },
    resources: { requests: { cpu: `${requests.cpuMilli}m`, memory: `${requests.memoryMiB}Mi` } },
    firmware: {
      kernelBoot: {
        container: { image, kernelPath: KERNEL_PATH, initrdPath: INITRD_PATH, imagePullPolicy: "IfNotPresent" },
        kernelArgs: `root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet systemd.machine_id=${machineId(spec.setId, machine)}`,
      },
    },
    devices: {
      autoattachGraphicsDevice: false,
      rng: {},
      disks: [
        { name: "root", disk: { bus: "virtio" } },
        { name: "cloudinit", disk: { bus: "virtio" } },
      ],
      // The Multus network and interface keep the name "session" (the VMs' spec as made before).
      interfaces: [
        { name: "default", masquerade: {}, ports: [{ name: "ssh", protocol: "TCP", port: SSH_PORT }] },
        { name: "session", bridge: {}, macAddress: mac },
      ],
    },
  };
}

/**
 * The golden PVC of a variant: a CDI DataVolume importing the containerDisk image's qcow2 from the
 * registry once; every VM's root disk is cloned from it (a CSI clone where the StorageClass offers
 * one, else a host-assisted copy).
 */
export function goldenDataVolume(settings: FleetSettings, variant: string, imageHash: string): KubeObject {
  return {
    apiVersion: "cdi.kubevirt.io/v1beta1",
    kind: "DataVolume",
    metadata: {
      name: goldenName(variant, imageHash),
      namespace: settings.namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_COMPONENT]: "golden-image", [LABEL_VARIANT]: variant },
      // Kept when its import finished: CDI would otherwise garbage-collect the DataVolume (the PVC stays either way).
      annotations: { "cdi.kubevirt.io/storage.deleteAfterCompletion": "false" },
    },
    spec: {
      source: { registry: { url: `docker://${imageReference(settings, variant, imageHash)}` } },
      storage: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: `${sizeOf(variant).diskGiB}Gi` } },
        ...(settings.storageClass ? { storageClassName: settings.storageClass } : {}),
      },
    },
  };
}

/** What one VM counts against a namespace ResourceQuota, in quota units. */
export function quotaUsage(
  settings: Pick<FleetSettings, "overcommit">,
  variant: string,
): { cpuMilli: number; memoryMiB: number; pods: number; storageGiB: number } {
  const size = sizeOf(variant);
  const pod = podRequests(size, settings.overcommit);
  return { cpuMilli: pod.cpuMilli, memoryMiB: pod.memoryMiB, pods: 1, storageGiB: size.diskGiB };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
