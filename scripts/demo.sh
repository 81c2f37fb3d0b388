#!/bin/sh
# `npm run demo`: installs the workspace, builds the queue server with its dashboard (so the URL the demo
# prints serves the page; turbo's cache makes later runs quick), then runs examples/quick-start with the
# arguments given (`npm run demo -- --keep-running` leaves the server up).
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
export TURBO_TELEMETRY_DISABLED=1
echo "building the queue server and its dashboard"
pnpm exec turbo run build --filter=@workq/queue-server --output-logs=errors-only
pnpm --silent --filter @workq/example-quick-start demo "$@"
