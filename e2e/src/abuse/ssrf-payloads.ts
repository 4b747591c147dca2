// The SSRF payload list for customer tools: every way of writing an endpoint that would reach something other than
// the public internet. IPv4 targets in every spelling the URL parser accepts (dotted, decimal, hex, octal, short
// forms, leading zeros, mixed, full-width and enclosed digits, ideographic dots, a trailing dot), IPv6 forms
// (loopback, unspecified, IPv4-mapped, -compatible and -translated, NAT64, 6to4, Teredo, unique-local with the EC2
// metadata address, link-local with and without a zone id, site-local, multicast, documentation), metadata and
// localhost names, names a hostile DNS answers with private addresses (through an injected resolver), credentials,
// schemes other than https, parser confusions, unicode and punycode hosts, and redirects to private targets.
import { isIPv4 } from 'node:net';

type RefusalOutcome = 'blocked_address' | 'invalid_endpoint' | 'redirect_refused' | 'connection_failed';

export interface SsrfPayload {
  endpoint: string;
  /** What the payload is, for failure messages and the report. */
  category: string;
  /** How the call must end: refused before any connection to the target. */
  expected: RefusalOutcome;
  /** Needs the hostile resolver (HOSTILE_DNS): only the executor with an injected resolver can run it. */
  resolver?: boolean;
  /** Means what this machine's resolver makes of it: only the system (no injected resolver) can run it. */
  localResolver?: boolean;
  /** A redirect from a public endpoint (the fake customer API) to the target. */
  redirect?: boolean;
}

/** IPv4 targets that must never be reached, loopback first (those would hit the canaries). */
const IPV4_TARGETS: readonly [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.1.2.3', 'loopback (not .1)'],
  ['0.0.0.0', 'this host'],
  ['10.0.0.1', 'private 10/8'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.254', 'private 172.16/12 (top)'],
  ['192.168.1.1', 'private 192.168/16'],
  ['169.254.169.254', 'link-local metadata service'],
  ['169.254.170.2', 'ECS task metadata'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.100.100.200', 'Alibaba metadata (CGNAT range)'],
  ['192.0.0.192', 'Oracle metadata (IETF range)'],
  ['192.0.2.1', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['224.0.0.1', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
];

function octets(address: string): number[] {
  return address.split('.').map(Number);
}

/** The spellings of an IPv4 address the WHATWG URL parser turns back into it. */
function spellings(address: string): [string, string][] {
  const [a, b, c, d] = octets(address) as [number, number, number, number];
  const uint = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  const fullWidth = (text: string) =>
    text.replace(/[0-9.]/g, (char) => (char === '.' ? '\uff0e' : String.fromCharCode(0xff10 + Number(char))));
  const enclosed = (text: string) =>
    text.replace(/[0-9]/g, (char) => (char === '0' ? '\u24ea' : String.fromCharCode(0x2460 + Number(char) - 1)));
  return [
    [address, 'dotted'],
    [String(uint), 'decimal'],
    [`0x${uint.toString(16)}`, 'hex'],
    [[a, b, c, d].map((octet) => `0x${octet.toString(16)}`).join('.'), 'dotted hex'],
    [`0${uint.toString(8)}`, 'octal'],
    [[a, b, c, d].map((octet) => `0${octet.toString(8)}`).join('.'), 'dotted octal'],
    [[a, b, c, d].map((octet) => `00${octet.toString(8)}`).join('.'), 'dotted octal with extra zeros'],
    [`${a}.${(b << 16) + (c << 8) + d}`, 'short form a.bcd'],
    [`${a}.${b}.${(c << 8) + d}`, 'short form a.b.cd'],
    [`0x${a.toString(16)}.${(b << 16) + (c << 8) + d}`, 'mixed hex and decimal'],
    [`${address}.`, 'trailing dot'],
    [fullWidth(address), 'full-width digits and dots'],
    [address.replace(/\./g, '\u3002'), 'ideographic full stops'],
    ...(/^[0-9.]+$/.test(address) && !address.includes('0') ? [[enclosed(address), 'enclosed alphanumerics'] as [string, string]] : []),
  ];
}

/** IPv6 literals that must never be reached. */
const IPV6_TARGETS: readonly [string, string][] = [
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback, long form'],
  ['0000::0001', 'loopback, leading zeros'],
  ['::', 'unspecified'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
  ['::FFFF:7F00:1', 'IPv4-mapped loopback, upper case'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
  ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata, hex'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::7f00:1', 'IPv4-compatible loopback, hex'],
  ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
  ['64:ff9b::7f00:1', 'NAT64 loopback, hex'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
  ['64:ff9b:1::a00:1', 'local-use NAT64 private'],
  ['2002:7f00:1::1', '6to4 of loopback'],
  ['2002:a9fe:a9fe::1', '6to4 of metadata'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo (client 127.0.0.1)'],
  ['2001:10::1', 'ORCHID'],
  ['2001:2::1', 'benchmarking'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation (RFC 9637)'],
  ['fc00::1', 'unique-local fc00::/8'],
  ['fd00::1', 'unique-local fd00::/8'],
  ['fd00:ec2::254', 'EC2 metadata (IPv6)'],
  ['fe80::1', 'link-local'],
  ['fe80::a9fe:a9fe', 'link-local (metadata bits)'],
  ['fec0::1', 'site-local (deprecated)'],
  ['ff02::1', 'multicast all-nodes'],
  ['ff05::1:3', 'multicast DHCP'],
];

/**
 * A hostile DNS: names and what it answers. Public-looking names that resolve to private addresses (as nip.io,
 * localtest.me and rebinding services do), cloud metadata names, cluster names, names that mix a public and a
 * private answer, answers that are not canonical IP text, and no answer at all.
 */
export const HOSTILE_DNS: Readonly<Record<string, readonly string[]>> = {
  localhost: ['127.0.0.1', '::1'],
  'localhost.': ['127.0.0.1', '::1'],
  'localhost.localdomain': ['127.0.0.1'],
  'api.localhost': ['127.0.0.1'],
  'ip6-localhost': ['::1'],
  'ip6-loopback': ['::1'],
  'localtest.me': ['127.0.0.1'],
  'lvh.me': ['127.0.0.1'],
  '127.0.0.1.nip.io': ['127.0.0.1'],
  '7f000001.nip.io': ['127.0.0.1'],
  '169.254.169.254.nip.io': ['169.254.169.254'],
  'metadata.google.internal': ['169.254.169.254'],
  metadata: ['169.254.169.254'],
  'instance-data': ['169.254.169.254'],
  'instance-data.ec2.internal': ['169.254.169.254'],
  'metadata.azure.com': ['169.254.169.254'],
  'kubernetes.default.svc': ['10.96.0.1'],
  'kubernetes.default.svc.cluster.local': ['10.96.0.1'],
  'postgres.internal.example.com': ['10.0.12.7'],
  'rebind.example.com': ['93.184.216.34', '127.0.0.1'],
  'dual-stack.example.com': ['2606:4700:4700::1111', '::1'],
  'mapped.example.com': ['::ffff:10.0.0.1'],
  'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
  'zero.example.com': ['0.0.0.0'],
  'cgnat.example.com': ['100.64.0.1'],
  'ula.example.com': ['fd12:3456:789a::1'],
  'link-local-zone.example.com': ['fe80::1%eth0'],
  'decimal-answer.example.com': ['2130706433'],
  'xn--80ak6aa92e.com': ['10.0.0.1'],
  'nothing.example.com': [],
};

export interface PayloadPorts {
  /** The IPv4 canary's port: loopback IPv4 payloads aim at it. */
  port4: number;
  /** The IPv6 canary's port (the IPv4 one when the machine has no IPv6). */
  port6: number;
  /** This machine's own non-public addresses (its interfaces): reaching them is reaching the host. */
  ownAddresses?: readonly string[];
  /** Names as this machine's own resolver answers them (/etc/hosts): those that resolve are refused as what they name. */
  localNames?: readonly { name: string; resolves: boolean }[];
}

/** The whole list, aimed at the canaries' ports. */
export function ssrfPayloads({ port4, port6, ownAddresses = [], localNames = [] }: PayloadPorts): SsrfPayload[] {
  const payloads: SsrfPayload[] = [];
  const add = (endpoint: string, category: string, expected: RefusalOutcome, extra: Partial<SsrfPayload> = {}) =>
    payloads.push({ endpoint, category, expected, ...extra });

  for (const [address, what] of [
    ...IPV4_TARGETS,
    ...ownAddresses.filter((own) => isIPv4(own)).map((own): [string, string] => [own, 'this machine']),
  ]) {
    for (const [spelling, how] of spellings(address))
      add(`https://${spelling}:${port4}/positions`, `IPv4 ${what}, ${how}`, 'blocked_address');
  }
  for (const [address, what] of [
    ...IPV6_TARGETS,
    ...ownAddresses.filter((own) => !isIPv4(own)).map((own): [string, string] => [own, 'this machine']),
  ]) {
    add(`https://[${address}]:${port6}/positions`, `IPv6 ${what}`, 'blocked_address');
  }
  // Zone ids: not valid in a URL at all.
  add(`https://[fe80::1%25eth0]:${port6}/`, 'IPv6 link-local with a zone id', 'invalid_endpoint');
  add(`https://[fe80::1%eth0]:${port6}/`, 'IPv6 link-local with a raw zone id', 'invalid_endpoint');
  add(`https://[::1%251]:${port6}/`, 'IPv6 loopback with a zone id', 'invalid_endpoint');

  for (const [name, answer] of Object.entries(HOSTILE_DNS)) {
    const port = answer.some((address) => address.includes(':')) ? port6 : port4;
    add(
      `https://${name}:${port}/positions`,
      `name answered with ${answer.length === 0 ? 'nothing' : answer.join(' + ')}`,
      answer.length === 0 ? 'connection_failed' : 'blocked_address',
      { resolver: true },
    );
  }
  // Names as this machine resolves them (no injected resolver): refused as what they resolve to, or not found.
  for (const { name, resolves } of localNames) {
    add(`https://${name}:${port4}/positions`, `${name}, as this machine resolves it`, resolves ? 'blocked_address' : 'connection_failed', {
      localResolver: true,
    });
  }

  // Unicode and punycode hosts: IDNA maps them to ASCII before anything resolves them.
  add(`https://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3:${port4}/`, 'enclosed-letter localhost', 'blocked_address');
  add(`https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:${port4}/`, 'full-width localhost', 'blocked_address');
  add(`https://loc%61lhost:${port4}/`, 'percent-encoded localhost', 'blocked_address');
  add(`https://LocalHost:${port4}/`, 'mixed-case localhost', 'blocked_address');
  add(
    'https://\u0430\u0440\u0440\u04cf\u0435.com/',
    'Cyrillic homograph (xn--80ak6aa92e.com) resolving to a private address',
    'blocked_address',
    { resolver: true },
  );
  add('https://xn--80ak6aa92e.com/', 'punycode host resolving to a private address', 'blocked_address', { resolver: true });

  // Parser confusions that still land on a private host.
  add(`https://127.0.0.1:${port4}#@api.example.com/`, 'fragment that looks like userinfo', 'blocked_address');
  add(`https://127.0.0.1:${port4}?@api.example.com/`, 'query that looks like userinfo', 'blocked_address');
  add(` https://127.0.0.1:${port4}/ `, 'surrounding spaces', 'blocked_address');
  add(`https://127.0.0.1:${port4}/\t\n`, 'tab and newline (stripped by the parser)', 'blocked_address');
  add(`https:127.0.0.1:${port4}/`, 'no slashes after the scheme', 'blocked_address');
  add(`https:/127.0.0.1:${port4}/`, 'one slash after the scheme', 'blocked_address');
  add(`https:\\\\127.0.0.1:${port4}/`, 'backslashes after the scheme', 'blocked_address');
  add(`HTTPS://127.0.0.1:${port4}/`, 'upper-case scheme', 'blocked_address');
  add(`https://127.0.0.1:0${port4}/`, 'port with a leading zero', 'blocked_address');

  // Credentials: refused before anything else, wherever they point.
  add(`https://user:pass@127.0.0.1:${port4}/`, 'credentials, loopback', 'invalid_endpoint');
  add(`https://api.example.com@127.0.0.1:${port4}/`, 'a public name as user name, loopback host', 'invalid_endpoint');
  add('https://user@169.254.169.254/latest/meta-data/', 'user name, metadata', 'invalid_endpoint');
  add(`https://:@127.0.0.1:${port4}/`, 'empty credentials', 'blocked_address');

  // Schemes other than https.
  for (const endpoint of [
    `http://127.0.0.1:${port4}/`,
    'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    `http://[::1]:${port6}/`,
    'file:///etc/passwd',
    `ftp://127.0.0.1:${port4}/`,
    `gopher://127.0.0.1:${port4}/_GET%20/%20HTTP/1.0`,
    `dict://127.0.0.1:${port4}/info`,
    `ldap://127.0.0.1:${port4}/`,
    `ws://127.0.0.1:${port4}/`,
    `wss://127.0.0.1:${port4}/`,
    'data:text/plain,hello',
    'javascript:alert(1)',
    `//127.0.0.1:${port4}/`,
    `127.0.0.1:${port4}`,
  ]) {
    add(endpoint, `scheme ${/^[a-z]+:/i.exec(endpoint)?.[0] ?? 'missing'}`, 'invalid_endpoint');
  }

  // Redirects from a public endpoint to private targets: never followed.
  for (const [to, what] of [
    [`https://127.0.0.1:${port4}/`, 'loopback canary over https'],
    [`http://127.0.0.1:${port4}/`, 'loopback canary over http'],
    [`https://[::1]:${port6}/`, 'IPv6 loopback canary'],
    [`https://2130706433:${port4}/`, 'decimal loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'metadata service'],
    [`https://localhost:${port4}/`, 'localhost'],
    ['file:///etc/passwd', 'a file'],
    [`gopher://127.0.0.1:${port4}/_x`, 'gopher'],
  ] as const) {
    add(to, `redirect to ${what}`, 'redirect_refused', { redirect: true });
  }
  return payloads;
}
