#!/usr/bin/env bash
# make cluster-down: deletes the k3d cluster and the saved credentials.
source "$(dirname "$0")/cluster-lib.sh"
need k3d
run k3d cluster delete "$CLUSTER"
run rm -rf "$STATE_DIR"
