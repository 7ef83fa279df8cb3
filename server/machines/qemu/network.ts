/**
 * The lab machine network policy of the QEMU provider (ARCHITECTURE.md: Lab machine network).
 * eth0 is default deny (vm.ts `ETH0_NETDEV`: QEMU user networking with `restrict=on`): a VM
 * reaches its own machine set's machines over eth1 and nothing else. Labs that ask for the internet
 * (lab.yaml `network.internet`) get it through a network namespace per set with NAT and drop
 * rules that keep the host and private ranges out (egress.ts); where that cannot be set up (not
 * root, nftables missing) they are refused, saying why. A plain unrestricted slirp in the host's
 * own network namespace is never used: it would hand the guests the host's loopback (10.0.2.2),
 * its LAN and link-local addresses.
 */

/**
 * Why a lab that asks for internet access does not start on this server's QEMU machines, for
 * operators; `reason` is egress.ts `egressUnavailable`'s answer. (Learners read errors.internetUnavailable.)
 */
export function internetLabRefusal(slug: string, reason: string): string {
  return (
    `lab ${slug} asks for internet access (lab.yaml network.internet: true), which the QEMU provider cannot give on this host: ` +
    `${reason}. The egress path (a network namespace per session with NAT and nftables rules that keep the host and private ` +
    "ranges out) needs root, iproute2, util-linux (nsenter) and nftables. Run scripts/install-deps.sh, or run the lab on static hosts."
  );
}

/** Thrown by the QEMU provider for a request that asks for the internet where the egress path cannot be set up. */
export class InternetNotOfferedError extends Error {
  readonly code = "INTERNET_NOT_OFFERED";
  constructor(slug: string, reason: string) {
    super(internetLabRefusal(slug, reason));
  }
}
