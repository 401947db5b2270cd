import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Where webhooks may not go unless the operator allows it: this host, link-local (cloud metadata
 * at 169.254.169.254), private and shared-address (CGNAT) ranges, where cluster pod and service
 * networks live, and addresses that are not unicast at all.
 */
const REFUSED_RANGES: [string, number, "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 3, "ipv4"],
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["64:ff9b::", 96, "ipv6"],
  ["64:ff9b:1::", 48, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
];

/** Names that only mean something inside this host or cluster (they resolve to refused ranges too). */
const INTERNAL_NAME = /(^|\.)(localhost|svc|cluster\.local|internal)\.?$/i;

const refused = new BlockList();
for (const [network, prefix, family] of REFUSED_RANGES) refused.addSubnet(network, prefix, family);

const familyOf = (address: string) => (isIP(address) === 6 ? "ipv6" : "ipv4");

/**
 * The operator's exceptions (`WEBHOOK_ALLOWED_HOSTS`): host names (`hooks.internal`, or
 * `*.svc.cluster.local` for every name under a domain), addresses and CIDR ranges.
 */
export class WebhookPolicy {
  readonly #names: string[] = [];
  readonly #suffixes: string[] = [];
  readonly #networks = new BlockList();

  /** Throws on an entry that is neither a host name, an address nor a CIDR range. */
  constructor(entries: string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      const [network, prefix, extra] = entry.split("/");
      if (network && isIP(network) && extra === undefined) {
        const family = familyOf(network);
        const bits = prefix === undefined ? (family === "ipv6" ? 128 : 32) : Number(prefix);
        if (!Number.isInteger(bits) || bits < 0 || bits > (family === "ipv6" ? 128 : 32)) {
          throw new Error(`WEBHOOK_ALLOWED_HOSTS: "${raw}" has an invalid prefix length`);
        }
        this.#networks.addSubnet(network, bits, family);
      } else if (/^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/.test(entry)) {
        if (entry.startsWith("*.")) this.#suffixes.push(entry.slice(1));
        else this.#names.push(entry);
      } else {
        throw new Error(`WEBHOOK_ALLOWED_HOSTS: "${raw}" is not a host name, an IP address or a CIDR range`);
      }
    }
  }

  allowsName(host: string): boolean {
    const name = host.toLowerCase();
    return this.#names.includes(name) || this.#suffixes.some((suffix) => name.endsWith(suffix));
  }

  /** Whether a webhook may connect to `address` (one of the addresses its host resolved to). */
  allowsAddress(address: string): boolean {
    const family = familyOf(address);
    return this.#networks.check(address, family) || !refused.check(address, family);
  }

  /** Why a webhook to `host` (resolved to `addresses`) is refused, or undefined when it may go. */
  refusal(host: string, addresses: string[]): string | undefined {
    if (this.allowsName(host)) return undefined;
    const allAllowed =
      addresses.length > 0 && addresses.every((address) => this.#networks.check(address, familyOf(address)));
    if (INTERNAL_NAME.test(host) && !allAllowed) {
      return `webhook host ${host} is internal to this host or cluster`;
    }
    const blocked = addresses.find((address) => !this.allowsAddress(address));
    if (blocked !== undefined)
      return `webhook host ${host} resolves to ${blocked}, a loopback, link-local or private address`;
    return undefined;
  }
}

const DNS_TIMEOUT_MS = 2000;

/** The host of an absolute webhook URL as DNS knows it (IPv6 literals without brackets). */
export const webhookHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** Every address `host` resolves to (itself when it is an address); empty when DNS fails or is slow. */
export async function resolveHost(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<[]>((resolve) => {
    timer = setTimeout(() => resolve([]), DNS_TIMEOUT_MS);
  });
  try {
    const found = lookup(host, { all: true, verbatim: true }).then(
      (addresses) => addresses.map(({ address }) => address),
      () => [],
    );
    return await Promise.race([found, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why the absolute webhook `url` is refused at run creation, or undefined. A host that does not
 * resolve now is let through: delivery resolves it again and checks whatever it resolves to then.
 */
export async function webhookRefusal(url: string, policy: WebhookPolicy): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "webhook is not a valid URL";
  }
  const host = webhookHost(parsed);
  if (policy.allowsName(host)) return undefined;
  return policy.refusal(host, await resolveHost(host));
}
