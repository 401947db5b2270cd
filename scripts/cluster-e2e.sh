#!/usr/bin/env bash
# make cluster-e2e: the operator's end-to-end suite (test/e2e.test.ts) against the k3d cluster.
# The suite runs its own control plane and operator from source against the cluster, so the
# installed operator is paused meanwhile (two reconcilers would fight over the same objects).
source "$(dirname "$0")/cluster-lib.sh"
need k3d kubectl
KUBECONFIG_FILE="$STATE_DIR/kubeconfig"
mkdir -p "$STATE_DIR"
run k3d kubeconfig write "$CLUSTER" --output "$KUBECONFIG_FILE"
export KUBECONFIG="$KUBECONFIG_FILE"
OPERATOR="deploy/agentplane-operator"
run kubectl -n "$RELEASE_NAMESPACE" scale "$OPERATOR" --replicas=0
trap 'run kubectl -n "$RELEASE_NAMESPACE" scale "$OPERATOR" --replicas=1' EXIT
cd "$ROOT"
run env E2E_KUBECONFIG="$KUBECONFIG_FILE" E2E_AGENT_IMAGES="$AGENT_IMAGE,$AGENT_IMAGE_NEXT" \
  npx vitest run test/e2e.test.ts
