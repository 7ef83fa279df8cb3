/**
 * The Kubernetes, KubeVirt, CDI and Multus API types Labdeck writes, as zod schemas: required
 * fields, enums and name formats as the API references document them, so a generated object that
 * the API server would refuse fails a test here first (manifests.test.ts, deploy-manifests.test.ts)
 * and the fake API (server/testing/fake-kube-api.ts) answers 422 as the real one would. Only the
 * fields Labdeck uses are listed, strictly: a misspelt field fails instead of being dropped
 * silently by the API server's pruning.
 *
 * Sources (read 2026-12-02):
 * - Kubernetes API reference v1.31, https://kubernetes.io/docs/reference/kubernetes-api/ :
 *   ObjectMeta, Secret v1, Service v1, ServiceAccount v1, NetworkPolicy networking.k8s.io/v1,
 *   Ingress networking.k8s.io/v1, Deployment apps/v1 (PodSpec, Container, Probe), Role and
 *   RoleBinding rbac.authorization.k8s.io/v1, PodDisruptionBudget policy/v1, Quantity
 *   (k8s.io/apimachinery resource.Quantity), names (DNS-1123 label and subdomain, DNS-1035 label),
 *   label keys and values ("Labels and Selectors" in the concepts docs).
 * - KubeVirt API reference v1.3, https://kubevirt.io/api-reference/v1.3.0/definitions.html :
 *   v1.VirtualMachine, v1.VirtualMachineSpec (runStrategy enum), v1.DataVolumeTemplateSpec,
 *   v1.VirtualMachineInstanceSpec, v1.DomainSpec, v1.CPU, v1.Memory, v1.ResourceRequirements,
 *   v1.Firmware, v1.KernelBoot, v1.KernelBootContainer, v1.Devices, v1.Disk, v1.DiskTarget (bus
 *   enum), v1.Interface (one binding), v1.Port (protocol enum), v1.Network (pod | multus),
 *   v1.PodNetwork, v1.MultusNetwork, v1.Volume (one source), v1.CloudInitNoCloudSource; and the
 *   user guide's "Interfaces and Networks" (masquerade only on the pod network).
 * - CDI API v1beta1 (kubevirt/containerized-data-importer doc/datavolumes.md,
 *   staging/src/kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1/types.go):
 *   DataVolumeSpec (one source: registry | pvc | http | blank; storage or pvc), registry url
 *   "docker://...".
 * - Multus NetworkAttachmentDefinition k8s.cni.cncf.io/v1 (k8snetworkplumbingwg multi-net-spec
 *   v1.2: spec.config is a CNI configuration as a JSON string) and the CNI bridge plugin's options
 *   (cni.dev/plugins/current/main/bridge: bridge name ≤ 15 characters, IFNAMSIZ).
 */
import { z } from "zod";

/** DNS-1123 label: most object names (Secrets, VMs, Roles …). */
export const Dns1123Label = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label");
/** DNS-1035 label: Service names (must start with a letter). */
export const Dns1035Label = z
  .string()
  .max(63)
  .regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1035 label");
/** DNS-1123 subdomain: names of DataVolumes, PVCs, Ingresses, Deployments. */
export const Dns1123Subdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, "must be a DNS-1123 subdomain");

const LabelName = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** Label key: optional DNS subdomain prefix (≤ 253) + "/" + name (≤ 63). */
export const LabelKey = z.string().refine((key) => {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  return LabelName.test(name) && (prefix === null || Dns1123Subdomain.safeParse(prefix).success);
}, "must be a label key ([prefix/]name)");
export const LabelValue = z
  .string()
  .regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, "must be a label value (≤ 63, alphanumeric at both ends)");
export const Labels = z.record(LabelKey, LabelValue);
export const Annotations = z.record(LabelKey, z.string());

/** resource.Quantity's serialised form. */
export const Quantity = z
  .string()
  .regex(/^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/, "must be a Kubernetes quantity");
const Cidr = z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/, "must be an IPv4 CIDR");
const Port = z.number().int().min(1).max(65535);
const Protocol = z.enum(["TCP", "UDP", "SCTP"]);
const ImagePullPolicy = z.enum(["Always", "IfNotPresent", "Never"]);

function meta<N extends z.ZodType<string>>(name: N, namespaced = true) {
  return z.strictObject({
    name,
    namespace: namespaced ? Dns1123Label : z.undefined(),
    labels: Labels.optional(),
    annotations: Annotations.optional(),
  });
}

const LabelSelector = z.strictObject({
  matchLabels: Labels.optional(),
  matchExpressions: z
    .array(
      z.strictObject({
        key: LabelKey,
        operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
        values: z.array(z.string()).optional(),
      }),
    )
    .optional(),
});

// ---------------------------------------------------------------------------------------------
// core/v1

export const Secret = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("Secret"),
  metadata: meta(Dns1123Subdomain),
  type: z.string().min(1).optional(),
  stringData: z.record(z.string().regex(/^[-._a-zA-Z0-9]+$/, "must be a Secret key"), z.string()).optional(),
  data: z.record(z.string().regex(/^[-._a-zA-Z0-9]+$/), z.string().regex(/^[A-Za-z0-9+/]*=*$/, "must be base64")).optional(),
});

const ServicePort = z.strictObject({
  name: Dns1123Label.optional(),
  protocol: Protocol.optional(),
  port: Port,
  targetPort: z.union([Port, Dns1123Label]).optional(),
});
export const Service = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("Service"),
  metadata: meta(Dns1035Label),
  spec: z.strictObject({
    type: z.enum(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]).optional(),
    selector: Labels.optional(),
    ports: z.array(ServicePort).min(1),
  }),
});

export const ServiceAccount = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("ServiceAccount"),
  metadata: meta(Dns1123Subdomain),
  automountServiceAccountToken: z.boolean().optional(),
});

// ---------------------------------------------------------------------------------------------
// networking.k8s.io/v1

const NetworkPolicyPeer = z.strictObject({
  podSelector: LabelSelector.optional(),
  namespaceSelector: LabelSelector.optional(),
  ipBlock: z.strictObject({ cidr: Cidr, except: z.array(Cidr).optional() }).optional(),
});
const NetworkPolicyPort = z.strictObject({
  protocol: Protocol.optional(),
  port: z.union([Port, z.string()]).optional(),
  endPort: Port.optional(),
});
export const NetworkPolicy = z.strictObject({
  apiVersion: z.literal("networking.k8s.io/v1"),
  kind: z.literal("NetworkPolicy"),
  metadata: meta(Dns1123Subdomain),
  spec: z.strictObject({
    podSelector: LabelSelector,
    policyTypes: z.array(z.enum(["Ingress", "Egress"])).optional(),
    ingress: z
      .array(z.strictObject({ from: z.array(NetworkPolicyPeer).optional(), ports: z.array(NetworkPolicyPort).optional() }))
      .optional(),
    egress: z.array(z.strictObject({ to: z.array(NetworkPolicyPeer).optional(), ports: z.array(NetworkPolicyPort).optional() })).optional(),
  }),
});

const IngressBackend = z.strictObject({
  service: z.strictObject({
    name: Dns1035Label,
    port: z.union([z.strictObject({ number: Port }), z.strictObject({ name: Dns1123Label })]),
  }),
});
export const Ingress = z.strictObject({
  apiVersion: z.literal("networking.k8s.io/v1"),
  kind: z.literal("Ingress"),
  metadata: meta(Dns1123Subdomain),
  spec: z.strictObject({
    ingressClassName: z.string().optional(),
    tls: z.array(z.strictObject({ hosts: z.array(z.string()).optional(), secretName: z.string().optional() })).optional(),
    rules: z
      .array(
        z.strictObject({
          host: z.string().optional(),
          http: z.strictObject({
            paths: z
              .array(
                z.strictObject({
                  path: z.string().startsWith("/"),
                  pathType: z.enum(["Exact", "Prefix", "ImplementationSpecific"]),
                  backend: IngressBackend,
                }),
              )
              .min(1),
          }),
        }),
      )
      .min(1),
  }),
});

// ---------------------------------------------------------------------------------------------
// apps/v1 Deployment (the fields the chart uses)

const EnvVar = z.strictObject({
  name: z.string().regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/),
  value: z.string().optional(),
  valueFrom: z
    .strictObject({
      secretKeyRef: z.strictObject({ name: Dns1123Subdomain, key: z.string(), optional: z.boolean().optional() }).optional(),
      fieldRef: z.strictObject({ fieldPath: z.string() }).optional(),
    })
    .optional(),
});
const Probe = z.strictObject({
  httpGet: z.strictObject({ path: z.string().startsWith("/"), port: z.union([Port, z.string()]) }),
  initialDelaySeconds: z.number().int().min(0).optional(),
  periodSeconds: z.number().int().min(1).optional(),
  timeoutSeconds: z.number().int().min(1).optional(),
  failureThreshold: z.number().int().min(1).optional(),
});
const Container = z.strictObject({
  name: Dns1123Label,
  image: z.string().min(1),
  imagePullPolicy: ImagePullPolicy.optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  ports: z.array(z.strictObject({ name: z.string().max(15).optional(), containerPort: Port, protocol: Protocol.optional() })).optional(),
  env: z.array(EnvVar).optional(),
  livenessProbe: Probe.optional(),
  readinessProbe: Probe.optional(),
  startupProbe: Probe.optional(),
  resources: z
    .strictObject({ requests: z.record(z.string(), Quantity).optional(), limits: z.record(z.string(), Quantity).optional() })
    .optional(),
  volumeMounts: z
    .array(z.strictObject({ name: Dns1123Label, mountPath: z.string().startsWith("/"), readOnly: z.boolean().optional() }))
    .optional(),
  securityContext: z.record(z.string(), z.unknown()).optional(),
});
export const Deployment = z.strictObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("Deployment"),
  metadata: meta(Dns1123Subdomain),
  spec: z.strictObject({
    replicas: z.number().int().min(0),
    selector: LabelSelector,
    strategy: z
      .strictObject({
        type: z.enum(["RollingUpdate", "Recreate"]),
        rollingUpdate: z
          .strictObject({
            maxUnavailable: z.union([z.number(), z.string()]).optional(),
            maxSurge: z.union([z.number(), z.string()]).optional(),
          })
          .optional(),
      })
      .optional(),
    template: z.strictObject({
      metadata: z.strictObject({ labels: Labels, annotations: Annotations.optional() }),
      spec: z.strictObject({
        serviceAccountName: Dns1123Subdomain.optional(),
        terminationGracePeriodSeconds: z.number().int().min(0).optional(),
        containers: z.array(Container).min(1),
        volumes: z
          .array(
            z.strictObject({
              name: Dns1123Label,
              secret: z.strictObject({ secretName: Dns1123Subdomain }).optional(),
              emptyDir: z.strictObject({}).optional(),
            }),
          )
          .optional(),
        securityContext: z.record(z.string(), z.unknown()).optional(),
      }),
    }),
  }),
});

export const PodDisruptionBudget = z.strictObject({
  apiVersion: z.literal("policy/v1"),
  kind: z.literal("PodDisruptionBudget"),
  metadata: meta(Dns1123Subdomain),
  spec: z.strictObject({
    minAvailable: z.union([z.number().int(), z.string()]).optional(),
    maxUnavailable: z.union([z.number().int(), z.string()]).optional(),
    selector: LabelSelector,
  }),
});

// ---------------------------------------------------------------------------------------------
// rbac.authorization.k8s.io/v1

export const PolicyRule = z.strictObject({
  apiGroups: z.array(z.string()).min(1),
  resources: z.array(z.string().min(1)).min(1),
  verbs: z.array(z.enum(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"])).min(1),
  resourceNames: z.array(z.string()).optional(),
});
export const Role = z.strictObject({
  apiVersion: z.literal("rbac.authorization.k8s.io/v1"),
  kind: z.literal("Role"),
  metadata: meta(Dns1123Subdomain),
  rules: z.array(PolicyRule).min(1),
});
export const RoleBinding = z.strictObject({
  apiVersion: z.literal("rbac.authorization.k8s.io/v1"),
  kind: z.literal("RoleBinding"),
  metadata: meta(Dns1123Subdomain),
  roleRef: z.strictObject({
    apiGroup: z.literal("rbac.authorization.k8s.io"),
    kind: z.enum(["Role", "ClusterRole"]),
    name: z.string().min(1),
  }),
  subjects: z
    .array(
      z.strictObject({ kind: z.enum(["ServiceAccount", "User", "Group"]), name: z.string().min(1), namespace: Dns1123Label.optional() }),
    )
    .min(1),
});

// ---------------------------------------------------------------------------------------------
// Multus

export const NetworkAttachmentDefinition = z.strictObject({
  apiVersion: z.literal("k8s.cni.cncf.io/v1"),
  kind: z.literal("NetworkAttachmentDefinition"),
  metadata: meta(Dns1123Subdomain),
  spec: z.strictObject({
    config: z.string().refine((text) => {
      try {
        const cni = JSON.parse(text) as Record<string, unknown>;
        return (
          typeof cni.cniVersion === "string" &&
          typeof cni.type === "string" &&
          (cni.type !== "bridge" || (typeof cni.bridge === "string" && cni.bridge.length >= 1 && cni.bridge.length <= 15))
        );
      } catch {
        return false;
      }
    }, "must be a CNI configuration in JSON (cniVersion, type; a bridge plugin's bridge name ≤ 15 characters)"),
  }),
});

// ---------------------------------------------------------------------------------------------
// CDI

const DataVolumeSource = z
  .strictObject({
    registry: z
      .strictObject({ url: z.string().regex(/^(docker|oci-archive):\/\/\S+$/, "must be docker://… or oci-archive://…") })
      .optional(),
    pvc: z.strictObject({ namespace: Dns1123Label, name: Dns1123Subdomain }).optional(),
    http: z.strictObject({ url: z.string().url() }).optional(),
    blank: z.strictObject({}).optional(),
  })
  .refine((s) => Object.values(s).filter((v) => v !== undefined).length === 1, "exactly one source");
const StorageSpec = z.strictObject({
  accessModes: z.array(z.enum(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"])).optional(),
  resources: z.strictObject({ requests: z.strictObject({ storage: Quantity }) }),
  storageClassName: z.string().optional(),
  volumeMode: z.enum(["Filesystem", "Block"]).optional(),
});
const DataVolumeSpec = z.strictObject({ source: DataVolumeSource, storage: StorageSpec });
export const DataVolume = z.strictObject({
  apiVersion: z.literal("cdi.kubevirt.io/v1beta1"),
  kind: z.literal("DataVolume"),
  metadata: meta(Dns1123Subdomain),
  spec: DataVolumeSpec,
});

// ---------------------------------------------------------------------------------------------
// KubeVirt

const KubeVirtPort = z.strictObject({ name: z.string().optional(), protocol: z.enum(["TCP", "UDP"]).optional(), port: Port });
const Interface = z
  .strictObject({
    name: Dns1123Label,
    masquerade: z.strictObject({}).optional(),
    bridge: z.strictObject({}).optional(),
    sriov: z.strictObject({}).optional(),
    passt: z.strictObject({}).optional(),
    model: z.enum(["virtio", "e1000", "e1000e", "ne2k_pci", "pcnet", "rtl8139"]).optional(),
    macAddress: z
      .string()
      .regex(/^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/)
      .optional(),
    ports: z.array(KubeVirtPort).optional(),
  })
  .refine(
    (i) => [i.masquerade, i.bridge, i.sriov, i.passt].filter((b) => b !== undefined).length === 1,
    "exactly one binding (masquerade, bridge, sriov, passt)",
  );
const Network = z
  .strictObject({
    name: Dns1123Label,
    pod: z.strictObject({ vmNetworkCIDR: Cidr.optional() }).optional(),
    multus: z.strictObject({ networkName: z.string().min(1), default: z.boolean().optional() }).optional(),
  })
  .refine((n) => (n.pod === undefined) !== (n.multus === undefined), "exactly one of pod, multus");
const Disk = z.strictObject({
  name: Dns1123Label,
  disk: z.strictObject({ bus: z.enum(["virtio", "sata", "scsi", "usb"]) }),
  bootOrder: z.number().int().min(1).optional(),
});
const Volume = z
  .strictObject({
    name: Dns1123Label,
    dataVolume: z.strictObject({ name: Dns1123Subdomain }).optional(),
    containerDisk: z
      .strictObject({ image: z.string().min(1), path: z.string().optional(), imagePullPolicy: ImagePullPolicy.optional() })
      .optional(),
    cloudInitNoCloud: z
      .strictObject({
        secretRef: z.strictObject({ name: Dns1123Subdomain }).optional(),
        networkDataSecretRef: z.strictObject({ name: Dns1123Subdomain }).optional(),
        userData: z.string().optional(),
        networkData: z.string().optional(),
      })
      .refine((c) => c.secretRef !== undefined || c.userData !== undefined, "user data from secretRef or userData")
      .optional(),
  })
  .refine(
    (v) => [v.dataVolume, v.containerDisk, v.cloudInitNoCloud].filter((s) => s !== undefined).length === 1,
    "exactly one volume source",
  );
const KernelBoot = z.strictObject({
  kernelArgs: z.string().optional(),
  container: z.strictObject({
    image: z.string().min(1),
    imagePullPolicy: ImagePullPolicy.optional(),
    imagePullSecret: z.string().optional(),
    kernelPath: z.string().startsWith("/").optional(),
    initrdPath: z.string().startsWith("/").optional(),
  }),
});
const PodAffinityTerm = z.strictObject({ labelSelector: LabelSelector, topologyKey: z.string().min(1) });
const VmiSpec = z
  .strictObject({
    domain: z.strictObject({
      cpu: z.strictObject({
        cores: z.number().int().min(1),
        sockets: z.number().int().min(1).optional(),
        threads: z.number().int().min(1).optional(),
      }),
      memory: z.strictObject({ guest: Quantity }),
      resources: z.strictObject({
        requests: z.strictObject({ cpu: Quantity.optional(), memory: Quantity.optional() }),
        overcommitGuestOverhead: z.boolean().optional(),
      }),
      firmware: z.strictObject({ kernelBoot: KernelBoot.optional() }).optional(),
      devices: z.strictObject({
        autoattachGraphicsDevice: z.boolean().optional(),
        rng: z.strictObject({}).optional(),
        disks: z.array(Disk).min(1),
        interfaces: z.array(Interface).min(1),
      }),
    }),
    networks: z.array(Network).min(1),
    affinity: z
      .strictObject({ podAffinity: z.strictObject({ requiredDuringSchedulingIgnoredDuringExecution: z.array(PodAffinityTerm).min(1) }) })
      .optional(),
    terminationGracePeriodSeconds: z.number().int().min(0).optional(),
    volumes: z.array(Volume).min(1),
  })
  .superRefine((spec, ctx) => {
    // Every disk and interface names a volume and network of the spec (the webhook refuses others).
    const volumes = new Set(spec.volumes.map((v) => v.name));
    for (const disk of spec.domain.devices.disks)
      if (!volumes.has(disk.name)) ctx.addIssue({ code: "custom", message: `disk ${disk.name} has no volume` });
    const networks = new Map(spec.networks.map((n) => [n.name, n]));
    for (const iface of spec.domain.devices.interfaces) {
      const network = networks.get(iface.name);
      if (!network) ctx.addIssue({ code: "custom", message: `interface ${iface.name} has no network` });
      // "Masquerade is only allowed to connect to the pod network" (user guide).
      else if (iface.masquerade && !network.pod)
        ctx.addIssue({ code: "custom", message: `interface ${iface.name}: masquerade needs the pod network` });
    }
  });
export const VirtualMachine = z.strictObject({
  apiVersion: z.literal("kubevirt.io/v1"),
  kind: z.literal("VirtualMachine"),
  metadata: meta(Dns1123Label),
  spec: z.strictObject({
    runStrategy: z.enum(["Always", "RerunOnFailure", "Manual", "Halted", "Once", "WaitAsReceiver"]),
    dataVolumeTemplates: z
      .array(z.strictObject({ metadata: z.strictObject({ name: Dns1123Subdomain, labels: Labels.optional() }), spec: DataVolumeSpec }))
      .optional(),
    template: z.strictObject({
      metadata: z.strictObject({ labels: Labels.optional(), annotations: Annotations.optional() }).optional(),
      spec: VmiSpec,
    }),
  }),
});

/** The schema of an object by its kind; for validating any generated object. */
export const SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  Secret,
  Service,
  ServiceAccount,
  NetworkPolicy,
  Ingress,
  Deployment,
  PodDisruptionBudget,
  Role,
  RoleBinding,
  NetworkAttachmentDefinition,
  DataVolume,
  VirtualMachine,
};

/** Problems of an object against its kind's schema ("path: message"), empty when it is valid. */
export function validateObject(object: unknown): string[] {
  const kind = (object as { kind?: unknown } | null)?.kind;
  const schema = typeof kind === "string" ? SCHEMAS[kind] : undefined;
  if (!schema) return [`no schema for kind ${JSON.stringify(kind)}`];
  const parsed = schema.safeParse(object);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
}
