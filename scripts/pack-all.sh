#!/bin/sh
# Builds the publishable packages and writes one installable tarball per package into ./packed/.
# `pnpm pack` applies each package's publishConfig (exports and bins pointing at dist/) and replaces
# `workspace:` ranges with the versions they stand for.
set -e
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
PACKAGES="@workq/core @workq/sdk @workq/queue-server @workq/cli"
filters=""
for name in $PACKAGES; do filters="$filters --filter=$name"; done
pnpm exec turbo run build $filters --output-logs=errors-only
rm -rf packed
mkdir -p packed
for name in $PACKAGES; do
  pnpm --filter "$name" pack --pack-destination "$PWD/packed" >/dev/null
done
ls packed
