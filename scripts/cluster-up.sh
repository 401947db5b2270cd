#!/usr/bin/env bash
# make cluster-up: a k3d cluster with agentplane installed, then the URL and an API key.
source "$(dirname "$0")/cluster-lib.sh"
need docker k3d kubectl
PORT="${PORT:-8080}"
HOST="agentplane.localhost"

if [ -n "${DRY_RUN:-}" ] || ! k3d cluster get "$CLUSTER" >/dev/null 2>&1; then
  run k3d cluster create "$CLUSTER" --wait --port "$PORT:80@loadbalancer"
fi
"$ROOT/scripts/cluster-images.sh"
run k3d image import --cluster "$CLUSTER" "$AGENT_IMAGE" "$AGENT_IMAGE_NEXT" "$PLATFORM_IMAGE"
for namespace in "$RELEASE_NAMESPACE" "$AGENT_NAMESPACE"; do
  if [ -n "${DRY_RUN:-}" ]; then
    echo "+ kubectl create namespace $namespace"
  elif ! kubectl get namespace "$namespace" >/dev/null 2>&1; then
    kubectl create namespace "$namespace"
  fi
done

# A fresh API key: only its SHA-256 goes to the cluster; the key itself is printed and kept in $STATE_DIR.
mkdir -p "$STATE_DIR"
chmod 700 "$STATE_DIR"
API_KEY="ap_$(node -e 'process.stdout.write(require("node:crypto").randomBytes(24).toString("base64url"))')"
ORGANIZATION_ID="$(node -e 'process.stdout.write(require("node:crypto").randomUUID())')"
WORKSPACE_ID="$(node -e 'process.stdout.write(require("node:crypto").randomUUID())')"
HASH="$(API_KEY="$API_KEY" node -e 'process.stdout.write(require("node:crypto").createHash("sha256").update(process.env.API_KEY).digest("hex"))')"
cat >"$STATE_DIR/values.yaml" <<VALUES
controlPlane:
  # The end-to-end suite expects its agents in one known namespace (docs/install.md: layouts).
  namespaceLayout: shared
  namespaces: [$AGENT_NAMESPACE]
  apiKeys:
    grants:
      - hash: "$HASH"
        organization_id: "$ORGANIZATION_ID"
        workspace_ids: ["$WORKSPACE_ID"]
  ingress:
    enabled: true
    host: $HOST
operator:
  # k3d's service load balancer gives each agent server an address reachable from this machine.
  agentServiceType: LoadBalancer
VALUES
(umask 077 && printf 'AGENTPLANE_URL=%s\nAGENTPLANE_API_KEY=%s\nAGENTPLANE_TENANT_ID=%s\n' \
  "http://$HOST:$PORT" "$API_KEY" "$WORKSPACE_ID" >"$STATE_DIR/credentials.env")

if [ -n "${DRY_RUN:-}" ]; then
  echo "+ helm upgrade --install agentplane charts/agentplane (rendered with helm template instead)"
  "$HELM" template agentplane "$ROOT/charts/agentplane" --namespace "$RELEASE_NAMESPACE" \
    --values "$STATE_DIR/values.yaml" --include-crds >"$STATE_DIR/rendered.yaml"
else
  "$HELM" upgrade --install agentplane "$ROOT/charts/agentplane" --namespace "$RELEASE_NAMESPACE" \
    --values "$STATE_DIR/values.yaml" --wait --timeout 5m
fi

cat <<DONE

agentplane is running in k3d cluster "$CLUSTER".
  Control plane: http://$HOST:$PORT   (docs: http://$HOST:$PORT/docs)
  API key:       $API_KEY
  Tenant id:     $WORKSPACE_ID
  Agent image:   $AGENT_IMAGE (serves the example graph)
Saved to $STATE_DIR/credentials.env. Next: make cluster-e2e, or the walkthrough in docs/install.md (Deploy your first agent).
DONE
