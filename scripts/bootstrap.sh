#!/usr/bin/env bash
# Makes a fresh clone runnable with nothing but the system Node and npm, then runs "$@".
#
# 1. Node 24 LTS and pnpm 10: when the system Node is older than 22, both come from the npm registry into
#    .tools/ (git-ignored); otherwise only pnpm does. Every later step runs with .tools/ first on PATH.
# 2. Dependencies: `pnpm install --frozen-lockfile`, skipped while the lockfile is unchanged.
# 3. The Prisma client: `prisma generate`, skipped while schema.prisma is unchanged. Generation is WebAssembly;
#    the schema-engine binary the CLI insists on downloading is pointed at a placeholder, as it is never run.
# A second run finds all three in place and only prints nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
node_spec="node@24"
pnpm_spec="pnpm@10.34.9"
say() { printf '[bootstrap] %s\n' "$*" >&2; }
hash_of() { cat "$@" | sha1sum | cut -c1-16; }

# Judge the system's Node, not one of ours that an earlier run left on PATH.
PATH="$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$tools/node_modules/.bin" | paste -sd: -)"
system_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
want_node=false
[ "$system_major" -lt 22 ] && want_node=true

tools_stamp="$tools/.stamp-$(printf '%s %s %s' "$node_spec" "$pnpm_spec" "$want_node" | sha1sum | cut -c1-16)"
if [ ! -f "$tools_stamp" ]; then
  if $want_node; then say "system Node is $(node -v 2>/dev/null || echo missing); installing $node_spec and $pnpm_spec into .tools/"
  else say "installing $pnpm_spec into .tools/"; fi
  rm -rf "$tools" && mkdir -p "$tools"
  specs=("$pnpm_spec"); $want_node && specs+=("$node_spec")
  npm install --prefix "$tools" --no-audit --no-fund --no-package-lock --loglevel=error "${specs[@]}" >&2
  touch "$tools_stamp"
fi
export PATH="$tools/node_modules/.bin:$root/node_modules/.bin:$PATH"
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  say "Node $(node -v) is on PATH after setup; expected 24" && exit 1
fi

cd "$root"
deps_stamp="node_modules/.bootstrap-deps-$(hash_of pnpm-lock.yaml pnpm-workspace.yaml package.json)"
if [ ! -f "$deps_stamp" ]; then
  say "installing dependencies (pnpm install --frozen-lockfile)"
  CI=true pnpm install --frozen-lockfile --prefer-offline --reporter=append-only >&2
  rm -f node_modules/.bootstrap-deps-* && touch "$deps_stamp"
fi

schema="packages/db/prisma/schema.prisma"
if [ -f "$schema" ]; then
  prisma_stamp="packages/db/src/generated/.stamp-$(hash_of "$schema" packages/db/package.json)"
  if [ ! -f "$prisma_stamp" ]; then
    say "generating the Prisma client"
    pnpm --filter @fin/db run --silent generate >&2
    touch "$prisma_stamp"
  fi
fi

exec "$@"
