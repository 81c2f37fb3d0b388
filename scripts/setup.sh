#!/bin/sh
# Installs the pinned pnpm (if missing) and the workspace's dependencies.
set -e
cd "$(dirname "$0")/.."
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
if [ "$(pnpm --version 2>/dev/null)" != "$want" ]; then
  echo "installing pnpm $want"
  npm install -g "pnpm@$want" >/dev/null
fi
export TURBO_TELEMETRY_DISABLED=1
pnpm install --frozen-lockfile
