#!/usr/bin/env bash
# CPU per run of the agent server at git ref $1 (default main) against the working tree, measured
# in alternating windows (bench/support/compare-servers.ts). The base revision runs from a
# temporary worktree with this checkout's node_modules, so both use the same dependencies (and
# the same workspace packages: `@agentplane/common` is this checkout's).
set -euo pipefail
base_ref=${1:-main}
root=$(git rev-parse --show-toplevel)
scratch=$(mktemp -d)
tree="$scratch/base"
git -C "$root" worktree add --detach "$tree" "$base_ref" >/dev/null
trap 'git -C "$root" worktree remove --force "$tree"; rm -rf "$scratch"' EXIT
for modules in "$root"/node_modules "$root"/*/node_modules; do
  if [ -d "$modules" ]; then ln -s "$modules" "$tree/${modules#"$root"/}"; fi
done
"$root/node_modules/.bin/node" --conditions=source "$root/bench/support/compare-servers.ts" "$tree" "$root" "${ROUNDS:-12}"
