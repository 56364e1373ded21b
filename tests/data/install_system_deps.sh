#!/usr/bin/env bash
# System packages some tests need, installed only when missing (idempotent, safe to rerun):
#   - dict-freedict-eng-deu: the FreeDict English-German dictionary the BLI tests and the
#     Bi-Sent2vec benchmark read (/usr/share/dictd/freedict-eng-deu.dict.dz + .index), and
#     every FreeDict dictionary the shipped configs name (config.yaml, resources/*/config.yaml:
#     `freedict:/usr/share/dictd/freedict-XXX-YYY.dict.dz` is package dict-freedict-XXX-YYY),
#     found by reading the configs, so a dictionary added to a config is installed here too;
#   - cmake and g++: the Bi-Sent2vec trainer is C++ built with CMake;
#   - patch: eflomal is built from PyPI's source with csrc/eflomal/seed.patch applied.
# Needs root for apt-get; without it, prints what to install and exits 0 (the tests that
# need a missing package skip, or fail naming it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The FreeDict dictionaries: eng-deu for the tests, and those the configs name.
dictionaries=$(
  {
    echo freedict-eng-deu
    grep -ohE 'freedict-[a-z]{3}-[a-z]{3}\.dict' "$root"/config.yaml "$root"/resources/*/config.yaml \
      | sed 's/\.dict$//' || true
  } | sort -u
)

missing=()
for name in $dictionaries; do
  [ -f "/usr/share/dictd/$name.dict.dz" ] || missing+=("dict-$name")
done
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v patch >/dev/null 2>&1 || missing+=(patch)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_system_deps: not root or no apt-get; please install: ${missing[*]}" >&2
  exit 0
fi
echo "install_system_deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
