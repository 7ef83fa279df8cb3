/**
 * The lab machine network policy of the QEMU provider (ARCHITECTURE.md: Lab machine network).
 * eth0 is default deny (vm.ts `ETH0_NETDEV`: QEMU user networking with `restrict=on`): a VM
 * reaches its own session's machines over eth1 and nothing else. Labs that ask for the internet
 * (lab.yaml `network.internet`) are refused on QEMU until an egress path exists that keeps the
 * host and private ranges out (a network namespace per session with NAT and drop rules); a
 * plain unrestricted slirp would hand them the host's loopback (10.0.2.2), its LAN and link-local
 * addresses.
 */

/** Why a lab that asks for internet access does not start on QEMU machines: for the learner (ja) and operators (en). */
export function internetLabRefusal(slug: string): { ja: string; en: string } {
  return {
    ja:
      "このラボはインターネット接続を必要としますが(lab.yaml の network.internet)、このサーバーの仮想マシンはインターネットに出られません。" +
      "ホストや内部ネットワークを守るため、仮想マシンの外向き通信はすべて遮断しています。管理者に連絡してください。",
    en:
      `lab ${slug} asks for internet access (lab.yaml network.internet: true), which the QEMU provider does not give: ` +
      "VMs' eth0 is default deny (QEMU user networking, restrict=on), and an egress path that keeps the host and private " +
      "ranges out (a network namespace per session) is not built yet. Run the lab on static hosts, or drop network.internet.",
  };
}

/** Thrown by the QEMU provider for a request that asks for the internet. */
export class InternetNotOfferedError extends Error {
  readonly code = "INTERNET_NOT_OFFERED";
  constructor(slug: string) {
    super(internetLabRefusal(slug).en);
  }
}
