/**
 * Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`), as numbers: precise enough to compare a
 * request with its limit or to add up a quota, which is all the control plane, the operator and the
 * Kubernetes API test server need them for.
 */

const SUFFIXES: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A resource.Quantity as a number (precise enough to compare requests with limits). */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return undefined;
  const match = /^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$/.exec(value);
  if (!match) return undefined;
  const base = Number(match[1]) * (match[2] ? 10 ** Number(match[2].slice(1)) : 1);
  return Number.isFinite(base) ? base * (SUFFIXES[match[3] ?? ""] ?? 1) : undefined;
}
