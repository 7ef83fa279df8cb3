/**
 * The course's labs: every lab validates, and every check script is exercised.
 * - kubespray-ha-inventory: checks and solutions run for real with Debian's Ansible on real
 *   inventories in a temporary root; kubespray's playbooks are a test stand-in (labs/…/test/README.md).
 * - multi-node, control-plane: Kubernetes cannot run here, so their checks run against RECORDED
 *   OUTPUTS (fake kubectl/systemctl/ip/curl from server/labs/recorded-command.sh); each check fails
 *   on the state before its step, naming what is wrong, and passes on the state after it.
 * - Both: each check also fails on recorded or scripted shortcuts (states that are true only now,
 *   or only look right: a /run drop-in, a hand-typed PLAY RECAP) and passes on other correct ways
 *   (kubeadm-flags.env, a dual-stack node, host_vars/<h>/, a warning on stderr, ...).
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECK_LIB, checkScript } from "./check-script";
import { runInFakeRoot, type FakeRootOptions, type FakeRootRun as Run } from "../testing/fake-root";
import { listLabs, loadLab, type Lab } from "./load";

const LABS_DIR = path.resolve("labs");
const RECORDED_COMMAND = path.resolve("server/labs/recorded-command.sh");
const COURSE_LABS = ["preinstall-checks", "multi-node", "control-plane", "kubespray-ha-inventory"];

/**
 * Runs a solution or a command with the platform's checklib first, the way the platform runs
 * scripts (clean environment), on a fake root (server/testing/fake-root.ts).
 */
function runScript(script: string, where: FakeRootOptions): Promise<Run> {
  return runInFakeRoot(`${CHECK_LIB}\n${script}`, where);
}

/** Runs a step's check exactly as the grader composes it (checkScript), on a fake root. */
function runCheck(lab: Lab, id: string, where: FakeRootOptions): Promise<Run> {
  return runInFakeRoot(checkScript(lab, stepOf(lab, id)), where);
}

const stepOf = (lab: Lab, id: string) => {
  const step = lab.steps.find((s) => s.id === id);
  if (!step) throw new Error(`${lab.slug} has no step ${id}`);
  return step;
};

describe("course labs", () => {
  it("labs validate accepts every lab, the four course labs among them, on their image variants", async () => {
    const { labs, errors } = await listLabs(LABS_DIR);
    expect(errors.map((e) => e.message)).toEqual([]);
    const bySlug = new Map(labs.map((l) => [l.slug, l]));
    for (const slug of COURSE_LABS) expect(bySlug.has(slug), slug).toBe(true);
    expect(bySlug.get("preinstall-checks")!.manifest.image).toBe("debian-base");
    expect(bySlug.get("multi-node")!.manifest.image).toBe("k8s-v1.31");
    expect(bySlug.get("control-plane")!.manifest.image).toBe("k8s-v1.31");
    expect(bySlug.get("kubespray-ha-inventory")!.manifest.image).toBe("kubespray-v2.26.0");
  });
});

// ---------------------------------------------------------------------------------------------
// kubespray-ha-inventory: real Ansible

/** Feedback each check must give before its step is done (Japanese, naming what is missing). */
const KUBESPRAY_BEFORE: Record<string, RegExp[]> = {
  inventory: [/\/root\/ha\/inventory.ini がまだありません/],
  "host-vars": [/cp1 の ansible_host が 10.20.0.11 ではありません\(今: 未設定\)/, /wk2 の ip が 10.20.0.22 ではありません\(今: 未設定\)/],
  validate: [/validate.log がまだありません/],
  "even-etcd": [/ha-even\/inventory.ini がまだありません/],
  quorum: [/quorum.txt がまだありません/],
  "api-access": [/api-access.txt がまだありません/],
  "list-hosts": [/wk3 が kube_node に入っていません/, /scale-hosts.txt に scale.yml の --list-hosts の出力がありません/],
  runbook: [/runbook.md がまだありません/],
};

describe("kubespray-ha-inventory: checks and solutions with real Ansible (kubespray playbooks: test stand-in)", () => {
  let lab: Lab;
  let root: string;
  /** The fake root's /root and /opt are the machine's, read-write (solutions write there). */
  const env = (): FakeRootOptions => ({ root, writable: ["root", "opt"] });
  const check = (id: string) => runCheck(lab, id, env());
  const solve = (id: string) => runScript(stepOf(lab, id).solution.content, env());

  beforeAll(async () => {
    lab = await loadLab(LABS_DIR, "kubespray-ha-inventory");
    root = await mkdtemp(path.join(tmpdir(), "labdeck-kubespray-lab-"));
    await mkdir(path.join(root, "opt"), { recursive: true });
    await mkdir(path.join(root, "root"), { recursive: true });
    await cp(path.join(lab.dir, "test/kubespray-standin"), path.join(root, "opt/kubespray"), { recursive: true });
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("has Debian's ansible-inventory and ansible-playbook (scripts/install-deps.sh installs ansible-core)", async () => {
    const version = await runScript("ansible-inventory --version | head -1", env());
    expect(version.stdout).toMatch(/^ansible-inventory \[core 2\.\d+/);
  });

  it("every step: the check fails before the solution, naming what is missing, and passes after it", async () => {
    expect(lab.steps.map((s) => s.id)).toEqual(Object.keys(KUBESPRAY_BEFORE));
    for (const step of lab.steps) {
      const before = await check(step.id);
      expect(before.code, `${step.id} before: ${before.stdout}`).toBe(1);
      for (const want of KUBESPRAY_BEFORE[step.id]!) expect(before.stdout, step.id).toMatch(want);
      const solution = await solve(step.id);
      expect(solution.code, `${step.id} solution: ${solution.stderr}`).toBe(0);
      const after = await check(step.id);
      expect(after.code, `${step.id} after: ${after.stdout}${after.stderr}`).toBe(0);
    }
  }, 480_000); // real Ansible runs; under a loaded 2-core machine the whole file took 241 s

  it("the inventories the solutions wrote are what the lab designs: 3 stacked etcd in ha, 2 in ha-even, wk3 a worker", async () => {
    const graph = (inv: string, group: string) =>
      runScript(`ansible-inventory -i /root/${inv}/inventory.ini --graph ${group}`, env()).then((r) => r.stdout);
    expect(await graph("ha", "etcd")).toMatch(/@etcd:\n {2}\|--@kube_control_plane:\n {2}\| {2}\|--cp1\n {2}\| {2}\|--cp2\n {2}\| {2}\|--cp3/);
    expect((await graph("ha-even", "etcd")).match(/--cp\d/g)).toEqual(["--cp1", "--cp2"]);
    expect(await graph("ha", "kube_node")).toMatch(/--wk1\n.*--wk2\n.*--wk3/);
    const evenLog = await readFile(path.join(root, "root/ha-even/validate.log"), "utf8");
    expect(evenLog).toMatch(/TASK \[validate_inventory : Stop if even number of etcd hosts\] \*+\nfatal: \[cp1\]: FAILED!/);
  });

  /**
   * Other correct ways (the check must pass) and shortcuts (it must fail, naming why), each a
   * script run on the solved root, then undone by `undo` before the next.
   */
  const KUBESPRAY_FIXTURES: { step: string; name: string; apply: string; undo: string; refuse?: RegExp }[] = [
    {
      step: "host-vars",
      name: "alternative: host_vars/cp1.yaml, a host_vars/cp2/ directory, wk1's vars inline in inventory.ini",
      apply: `cd /root/ha && mv host_vars/cp1.yml host_vars/cp1.yaml && mkdir host_vars/cp2 && mv host_vars/cp2.yml host_vars/cp2/main.yml &&
        rm host_vars/wk1.yml && sed -i 's/^wk1$/wk1 ansible_host=10.20.0.21 ip=10.20.0.21/' inventory.ini`,
      undo: `cd /root/ha && mv host_vars/cp1.yaml host_vars/cp1.yml && mv host_vars/cp2/main.yml host_vars/cp2.yml && rmdir host_vars/cp2 &&
        sed -i 's/^wk1 .*/wk1/' inventory.ini && printf 'ansible_host: 10.20.0.21\nip: 10.20.0.21\n' >host_vars/wk1.yml`,
    },
    {
      step: "validate",
      name: "alternative: the log saved with -v -c local, > and 2>&1",
      apply: `cp /root/ha/validate.log /root/validate.keep && cd /opt/kubespray && export PATH=/opt/kubespray-venv/bin:$PATH &&
        ansible-playbook -v -c local -i /root/ha/inventory.ini playbooks/boilerplate.yml >/root/ha/validate.log 2>&1`,
      undo: "mv /root/validate.keep /root/ha/validate.log",
    },
    {
      step: "validate",
      name: "shortcut: a hand-typed log with the task name and a PLAY RECAP of failed=0",
      apply: `cp /root/ha/validate.log /root/validate.keep && { echo 'TASK [validate_inventory : Stop if even number of etcd hosts] ***'; echo 'PLAY RECAP ***';
        for h in cp1 cp2 cp3 wk1 wk2; do echo "$h : ok=2 changed=0 unreachable=0 failed=0 skipped=0 rescued=0 ignored=0"; done; } >/root/ha/validate.log`,
      undo: "mv /root/validate.keep /root/ha/validate.log",
      refuse: /validate.log が、今の \/root\/ha のインベントリで検査を流した結果と違います/,
    },
    {
      step: "even-etcd",
      name: "alternative: the log saved with tee and -v",
      apply: `cp /root/ha-even/validate.log /root/even.keep && cd /opt/kubespray && export PATH=/opt/kubespray-venv/bin:$PATH &&
        { ansible-playbook -v -i /root/ha-even/inventory.ini playbooks/boilerplate.yml -e ansible_connection=local | tee /root/ha-even/validate.log >/dev/null; true; }`,
      undo: "mv /root/even.keep /root/ha-even/validate.log",
    },
    {
      step: "even-etcd",
      name: "shortcut: a hand-typed fatal: line under the task",
      apply: `cp /root/ha-even/validate.log /root/even.keep && printf '%s\n' 'TASK [validate_inventory : Stop if even number of etcd hosts] ***' 'fatal: [cp1]: FAILED! => {"msg": "even"}' >/root/ha-even/validate.log`,
      undo: "mv /root/even.keep /root/ha-even/validate.log",
      refuse: /ha-even\/validate.log が、今の \/root\/ha-even のインベントリで検査を流した結果と違います/,
    },
    {
      step: "list-hosts",
      name: "alternative: -l wk3 and --extra-vars node=wk3, saved with > and 2>&1",
      apply: `cd /opt/kubespray && export PATH=/opt/kubespray-venv/bin:$PATH && cp /root/ha/scale-hosts.txt /root/ha/remove-hosts.txt /root/ &&
        ansible-playbook -i /root/ha/inventory.ini scale.yml -l wk3 --list-hosts >/root/ha/scale-hosts.txt 2>&1 &&
        ansible-playbook -i /root/ha/inventory.ini remove-node.yml --extra-vars node=wk3 --list-hosts >/root/ha/remove-hosts.txt 2>&1`,
      undo: "mv /root/scale-hosts.txt /root/remove-hosts.txt /root/ha/",
    },
    {
      step: "list-hosts",
      name: "shortcut: a hand-typed scale.yml --list-hosts with one play for wk3",
      apply: `cp /root/ha/scale-hosts.txt /root/ && printf 'playbook: scale.yml\n\n  play #1 (kube_node): Add worker\tTAGS: []\n    pattern: [\x27kube_node\x27]\n    hosts (1):\n      wk3\n' >/root/ha/scale-hosts.txt`,
      undo: "mv /root/scale-hosts.txt /root/ha/",
      refuse: /scale-hosts.txt の play と対象のホストが、今 ansible-playbook scale.yml --limit wk3 --list-hosts が出すものと違います/,
    },
  ];

  it("passes on each other correct way to do a step, fails on each shortcut (after the solutions, undone between)", async () => {
    for (const f of KUBESPRAY_FIXTURES) {
      expect((await check(f.step)).code, `${f.step} solved, before ${f.name}`).toBe(0);
      const applied = await runScript(f.apply, env());
      expect(applied.code, `${f.name}: ${applied.stderr}`).toBe(0);
      const result = await check(f.step);
      if (f.refuse) {
        expect(result.code, `${f.step} ${f.name}: ${result.stdout}`).toBe(1);
        expect(result.stdout, f.name).toMatch(f.refuse);
      } else expect(result.code, `${f.step} ${f.name}: ${result.stdout}${result.stderr}`).toBe(0);
      const undone = await runScript(f.undo, env());
      expect(undone.code, `undo ${f.name}: ${undone.stderr}`).toBe(0);
    }
    for (const id of ["host-vars", "validate", "even-etcd", "list-hosts"]) expect((await check(id)).code, `${id} after the fixtures`).toBe(0);
  }, 480_000); // real Ansible runs; under a loaded 2-core machine the whole file took 241 s

  it("names the mistakes: a worker in etcd (even count), a missing ip, a recap with a failure, a wrong quorum row", async () => {
    const ha = path.join(root, "root/ha");
    const edit = (script: string) => runScript(script, env());
    await edit(`sed -i 's/^\\[etcd:children\\]$/[etcd]\\nwk1\\n[etcd:children]/' ${ha}/inventory.ini`);
    expect((await check("inventory")).stdout).toMatch(/etcd はコントロールプレーンと同じ 3 台.*今: cp1 cp2 cp3 wk1/);
    expect((await check("validate")).stdout).toMatch(/etcd が 4 台\(偶数\)です/);
    await edit(`sed -i '/^\\[etcd\\]$/,+1d' ${ha}/inventory.ini && sed -i '/^ip:/d' ${ha}/host_vars/cp2.yml`);
    expect((await check("host-vars")).stdout).toMatch(/cp2 の ip が 10.20.0.12 ではありません\(今: 未設定\)/);
    await edit(`sed -i 's/failed=0 /failed=1 /' ${ha}/validate.log`);
    expect((await check("validate")).stdout).toMatch(/validate.log が、今の \/root\/ha のインベントリで検査を流した結果と違います/);
    await edit(`sed -i 's/^4 3 1$/4 2 2/' ${ha}/quorum.txt`);
    expect((await check("quorum")).stdout).toBe("メンバー 4 の行が違います(今: 2 2)。過半数は n // 2 + 1、耐えられる障害の数は n − 過半数 です\n");
  });
});

// ---------------------------------------------------------------------------------------------
// multi-node and control-plane: RECORDED OUTPUTS

interface RecordedLab {
  slug: string;
  /** Feedback each check must give on the state before its step. */
  before: Record<string, RegExp[]>;
  /** States with a typical mistake or a shortcut (true only now, or only looks right): the check of `step` must fail there, naming it. */
  mistakes: { state: string; step: string; expect: RegExp[] }[];
  /** Other correct ways to do a step (recorded states): its check must pass there. */
  alternatives: { state: string; step: string }[];
}

const RECORDED_LABS: RecordedLab[] = [
  {
    slug: "multi-node",
    before: {
      nics: [/\/root\/nics.txt がまだありません/],
      init: [/kubeadm init がまだ終わっていません/],
      flannel: [/DaemonSet kube-flannel-ds がありません/, /controlplane ノードがまだ Ready ではありません/],
      "join-node01": [/node01 がまだクラスターに参加していません/],
      "join-node02": [/node02 がまだクラスターに参加していません/],
      "cross-node": [/app=web の Pod がありません/],
      drain: [/node01 はまだスケジュール可能です/, /node01 にまだ web の Pod があります: web-6d4cf56db6-7xk2p/],
      uncordon: [/node01 はまだ cordon されたままです/, /after-uncordon.txt がありません/],
      "revive-node02": [/kubelet は enable されていません。今は動いていても、次に再起動するとまた戻ってきません/],
    },
    mistakes: [
      {
        state: "mistake-init-without-node-ip",
        step: "init",
        expect: [/--node-ip=192.168.56.10 がありません/, /InternalIP が 192.168.56.10 ではありません\(今: 10.0.2.15\)/, /--apiserver-advertise-address=192.168.56.10/],
      },
      { state: "mistake-flannel-without-iface", step: "flannel", expect: [/controlplane で使っているアドレスが 192.168.56.10 ではありません\(今: 10.0.2.15、/, /コンテナ引数\(今: \["--ip-masq","--kube-subnet-mgr"\]\)で eth1 を選ばせ/] },
      {
        state: "mistake-node02-rebooted-enabled-not-started",
        step: "revive-node02",
        expect: [/kubelet が動いていません\(状態: inactive\)/, /enable されていません/, /まだ Ready ではありません/],
      },
      // `systemctl enable --runtime kubelet`: the wants link lives in /run, gone at the next boot.
      { state: "mistake-node02-enabled-runtime", step: "revive-node02", expect: [/enable されていません。今は動いていても、次に再起動するとまた戻ってきません/] },
      // A drop-in under /run: the running kubelet has the address, its next start will not.
      { state: "shortcut-init-runtime-dropin", step: "init", expect: [/^再起動後: kubelet が次に起動するときのコマンドラインに --node-ip=192.168.56.10 がありません\(今: なし\)/m] },
      // Environment=KUBELET_EXTRA_ARGS in a drop-in: kubeadm's EnvironmentFile=/etc/default/kubelet overrides it.
      {
        state: "shortcut-init-dropin-environment-overridden",
        step: "init",
        expect: [/^再起動後: kubelet が次に起動するときのコマンドラインに --node-ip=192.168.56.10 がありません/m, /InternalIP が 192.168.56.10 ではありません\(今: 10.0.2.15\)/],
      },
      // The literal --iface=eth1 in the DaemonSet while flanneld still uses eth0's address.
      { state: "shortcut-flannel-args-only", step: "flannel", expect: [/Flannel が controlplane で使っているアドレスが 192.168.56.10 ではありません\(今: 10.0.2.15、/] },
      // A listing typed by hand: its Pod names are not the cluster's.
      { state: "shortcut-uncordon-hand-typed-listing", step: "uncordon", expect: [/after-uncordon.txt に、今ある web の Pod web-6d4cf56db6-q9m4z\(node02\)の行がありません/] },
    ],
    alternatives: [
      { state: "alt-init-kubeadm-flags", step: "init" },
      { state: "alt-init-dropin-execstart", step: "init" },
      { state: "alt-init-dual-stack", step: "init" },
      { state: "alt-flannel-iface-split-args", step: "flannel" },
      { state: "alt-flannel-iface-can-reach", step: "flannel" },
      { state: "alt-join-node01-dual-stack", step: "join-node01" },
      { state: "alt-uncordon-no-headers", step: "uncordon" },
    ],
  },
  {
    slug: "control-plane",
    before: {
      explore: [/\/root\/explore.txt がまだありません/],
      labels: [/名前空間 shop がありません/],
      context: [/\/root\/shop.kubeconfig がまだありません/],
      "dry-run": [/\/root\/web.yaml がまだありません/],
      crd: [/CustomResourceDefinition backups.labdeck.example がありません/],
      reject: [/Backup nightly がありません/, /bad-backup.yaml がありません/, /reject.txt に、API サーバーが返した拒否のメッセージ/],
    },
    mistakes: [
      { state: "mistake-context-not-selected", step: "context", expect: [/現在のコンテキストが決まっていません/, /認証できません/] },
      {
        state: "mistake-dry-run-strategy-not-set",
        step: "dry-run",
        expect: [/web.yaml に spec.strategy.rollingUpdate.maxUnavailable: 0 がありません/, /maxUnavailable が 0 ではありません\(今: 25%\)/],
      },
      { state: "mistake-crd-without-bounds", step: "crd", expect: [/spec.required に retentionDays がありません/, /minimum: 1 と maximum: 30 がありません/] },
      { state: "mistake-reject-good-object", step: "reject", expect: [/API サーバーが受け付けてしまいます/] },
      { state: "shortcut-reject-hand-typed", step: "reject", expect: [/reject.txt の拒否のメッセージが、今 API サーバーが \/root\/bad-backup.yaml に返す理由\(spec.retentionDays: Invalid value: 90/] },
    ],
    alternatives: [
      { state: "alt-explore-lenient-answers", step: "explore" },
      { state: "alt-context-warning-on-stderr", step: "context" },
      { state: "alt-dry-run-warning-on-stderr", step: "dry-run" },
      { state: "alt-reject-saved-from-apply", step: "reject" },
    ],
  },
];

/** Every command name any recording of the lab fakes, plus the ones a check must never run for real here. */
async function fakedCommands(recordedDir: string): Promise<string[]> {
  const names = new Set(["kubectl", "kubeadm", "systemctl", "journalctl", "crictl", "ip", "ss", "curl"]);
  for (const state of await readdir(recordedDir)) {
    const text = await readFile(path.join(recordedDir, state, "commands.txt"), "utf8");
    for (const m of text.matchAll(/^### (?:rc=\d+ )?(\S+)/gm)) names.add(m[1]!);
  }
  return [...names];
}

for (const recorded of RECORDED_LABS) {
  describe(`${recorded.slug}: checks against recorded outputs`, () => {
    let lab: Lab;
    let bin: string;
    let recordedDir: string;

    beforeAll(async () => {
      lab = await loadLab(LABS_DIR, recorded.slug);
      recordedDir = path.join(lab.dir, "test/recorded");
      bin = await mkdtemp(path.join(tmpdir(), "labdeck-recorded-"));
      for (const name of await fakedCommands(recordedDir)) await symlink(RECORDED_COMMAND, path.join(bin, name));
    });
    afterAll(async () => {
      await rm(bin, { recursive: true, force: true });
    });

    /** Runs a step's check on a recorded state; a command line without a recording fails the test. */
    async function checkOn(stepId: string, state: string): Promise<Run> {
      const dir = path.join(recordedDir, state);
      // recorded-command.sh reads its recording and writes its misses beside itself (the fake
      // commands' directory, bound over /usr/local/bin): the check's environment is clean.
      const misses = path.join(bin, "misses.txt");
      await rm(misses, { force: true });
      await rm(path.join(bin, "recording.txt"), { force: true });
      await symlink(path.join(dir, "commands.txt"), path.join(bin, "recording.txt"));
      const result = await runCheck(lab, stepId, { root: path.join(dir, "fs"), bin });
      const missing = await readFile(misses, "utf8").catch(() => "");
      expect(missing, `${stepId} on ${state} ran commands with no recorded output`).toBe("");
      return result;
    }

    /** The trajectory: 00-setup, then one state per step in lab order. */
    async function states(): Promise<string[]> {
      const names = (await readdir(recordedDir)).filter((n) => /^\d\d-/.test(n)).sort();
      expect(names).toEqual(["00-setup", ...lab.steps.map((s, i) => `${String(i + 1).padStart(2, "0")}-${s.id}`)]);
      return names;
    }

    it("each step's check fails on the recorded state before it, naming what is wrong, and passes on the state after it", async () => {
      const trajectory = await states();
      expect(Object.keys(recorded.before)).toEqual(lab.steps.map((s) => s.id));
      for (const [i, step] of lab.steps.entries()) {
        const before = await checkOn(step.id, trajectory[i]!);
        expect(before.code, `${step.id} on ${trajectory[i]}: ${before.stdout}`).toBe(1);
        for (const want of recorded.before[step.id]!) expect(before.stdout, `${step.id} on ${trajectory[i]}`).toMatch(want);
        const after = await checkOn(step.id, trajectory[i + 1]!);
        expect(after.code, `${step.id} on ${trajectory[i + 1]}: ${after.stdout}${after.stderr}`).toBe(0);
        expect(after.stdout.trim().length).toBeGreaterThan(0);
      }
    });

    it("passes on each other correct way to do a step (recorded alternative states)", async () => {
      for (const alt of recorded.alternatives) {
        expect((await stat(path.join(recordedDir, alt.state))).isDirectory()).toBe(true);
        const result = await checkOn(alt.step, alt.state);
        expect(result.code, `${alt.state}: ${result.stdout}${result.stderr}`).toBe(0);
      }
    });

    it("every recorded state is used: the trajectory, a mistake or shortcut, or an alternative", async () => {
      const used = new Set([...recorded.mistakes.map((m) => m.state), ...recorded.alternatives.map((a) => a.state)]);
      const stray = (await readdir(recordedDir)).filter((n) => !/^\d\d-/.test(n) && !used.has(n));
      expect(stray).toEqual([]);
    });

    it("names the learner's typical mistakes and refuses the shortcuts (recorded states)", async () => {
      for (const mistake of recorded.mistakes) {
        expect((await stat(path.join(recordedDir, mistake.state))).isDirectory()).toBe(true);
        const result = await checkOn(mistake.step, mistake.state);
        expect(result.code, `${mistake.state}: ${result.stdout}`).toBe(1);
        for (const want of mistake.expect) expect(result.stdout, mistake.state).toMatch(want);
      }
    });
  });
}
