#!/usr/bin/env bash
# Builds the two images from docker/Dockerfile (make images).
source "$(dirname "$0")/cluster-lib.sh"
need docker
cd "$ROOT"
run docker build -f docker/Dockerfile --target agent-server -t "$AGENT_IMAGE" .
run docker build -f docker/Dockerfile --target platform -t "$PLATFORM_IMAGE" .
run docker tag "$AGENT_IMAGE" "$AGENT_IMAGE_NEXT"
