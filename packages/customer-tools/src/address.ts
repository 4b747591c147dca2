// Which IP addresses a customer tool may be connected to: public unicast only. The lists are the IANA IPv4 and
// IPv6 special-purpose registries (RFC 6890 and its updates) plus multicast and the cloud metadata addresses.
// IPv6 is an allowlist first (global unicast 2000::/3 only), so an address form we did not think of is refused,
// not allowed: that covers IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96,
// 64:ff9b:1::/48), unique-local (fc00::/7, including the EC2 metadata address fd00:ec2::254), link-local and
// multicast at once. Inside 2000::/3 the ranges that embed or reach IPv4 (6to4, Teredo) are refused too.
import { BlockList, isIP } from 'node:net';

function blockList(family: 'ipv4' | 'ipv6', ranges: readonly (readonly [string, number])[]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const IPV4_REFUSED = blockList('ipv4', [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, including the 169.254.169.254 metadata service
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.31.196.0', 24], // AS112
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // AS112
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
]);

const IPV6_GLOBAL = blockList('ipv6', [['2000::', 3]]);
const IPV6_REFUSED = blockList('ipv6', [
  ['2001::', 23], // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID, AMT, …
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds an IPv4 address that may be private
  ['2620:4f:8000::', 48], // AS112
  ['3fff::', 20], // documentation (RFC 9637)
]);

const IPV4_LOOPBACK = blockList('ipv4', [['127.0.0.0', 8]]);
const IPV6_LOOPBACK = blockList('ipv6', [['::1', 128]]);

export interface AddressPolicy {
  /**
   * Tests only: also allow 127.0.0.0/8 and ::1, so a test can stand a fake customer API on loopback. Nothing
   * else is widened: private, link-local, metadata and mapped forms stay refused.
   */
  allowLoopback?: boolean;
  /**
   * Development only (WEBHOOK_ALLOW_LOCAL_HTTP, refused when NODE_ENV=production): a webhook receiver on this
   * machine may be plain http:// when its host is a loopback address or `localhost`. Every other target stays
   * https:// only.
   */
  allowLocalHttp?: boolean;
}

/** Whether a URL's host is this machine by name or literal: `localhost` (or `*.localhost`), 127.0.0.0/8, ::1. */
export function isLoopbackHost(hostname: string): boolean {
  const host = bareAddress(hostname).toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 4) return IPV4_LOOPBACK.check(host, 'ipv4');
  if (family === 6) return IPV6_LOOPBACK.check(host, 'ipv6');
  return false;
}

/** Strips the brackets of an IPv6 literal as it appears in a URL's host (`[::1]`) and any zone id. */
export function bareAddress(host: string): string {
  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return unbracketed.replace(/%.*$/, '');
}

/**
 * True when `address` (an IP literal in canonical or any textual form Node accepts) is a public unicast
 * address this service may connect to. Anything that is not an IP literal is false.
 */
export function isAllowedAddress(address: string, { allowLoopback = false }: AddressPolicy = {}): boolean {
  const ip = bareAddress(address);
  const family = isIP(ip);
  if (family === 4) {
    if (allowLoopback && IPV4_LOOPBACK.check(ip, 'ipv4')) return true;
    return !IPV4_REFUSED.check(ip, 'ipv4');
  }
  if (family === 6) {
    if (allowLoopback && IPV6_LOOPBACK.check(ip, 'ipv6')) return true;
    return IPV6_GLOBAL.check(ip, 'ipv6') && !IPV6_REFUSED.check(ip, 'ipv6');
  }
  return false;
}
