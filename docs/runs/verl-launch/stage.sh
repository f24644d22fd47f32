#!/usr/bin/env bash
# Device calls 1-3 (README.md): copy what this call carried to /tmp/verl-carry; the machine keeps /tmp while warm.
set -eu
mkdir -p /tmp/verl-carry
for d in .vm1 .vm2 .vw1 .vw2; do [ -d "$d" ] && cp -r "$d"/. /tmp/verl-carry/; done
ls -l /tmp/verl-carry
