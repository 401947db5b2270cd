# Shared by the scripts/cluster-*.sh scripts (sourced, not run).
# DRY_RUN=1 prints the commands that need Docker or a cluster instead of running them; local steps
# still run, and helm renders the chart (`helm template`) instead of installing it. The tests in
# test/packaging.test.ts drive every script this way.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER="${CLUSTER:-agentplane}"
RELEASE_NAMESPACE="${RELEASE_NAMESPACE:-agentplane}"
AGENT_NAMESPACE="${AGENT_NAMESPACE:-agents}"
VERSION="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json")"
AGENT_IMAGE="agentplane/agent-server:$VERSION"
# A second tag of the same image: the e2e suite rolls a deployment from one image to another.
AGENT_IMAGE_NEXT="agentplane/agent-server:$VERSION-next"
PLATFORM_IMAGE="agentplane/platform:$VERSION"
STATE_DIR="${STATE_DIR:-$ROOT/.agentplane/cluster}"
HELM="$ROOT/scripts/cluster-helm.sh"

run() {
  if [ -n "${DRY_RUN:-}" ]; then echo "+ $*"; else "$@"; fi
}

need() {
  [ -n "${DRY_RUN:-}" ] && return 0
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "missing: ${missing[*]}. The local cluster needs Docker and k3d (https://k3d.io);" >&2
    echo "without them, use any cluster: make images, push, then helm install (see docs/install.md)." >&2
    exit 1
  fi
  docker info >/dev/null 2>&1 || { echo "the Docker engine is not running" >&2; exit 1; }
}
