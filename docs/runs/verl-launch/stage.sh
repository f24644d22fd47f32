#!/usr/bin/env bash
# Each device call (README.md): check the part this call carried (.vllmNN, sha256 from the manifest) and copy it to
# /tmp/verl-carry, which the machine keeps while it is warm (30 s after a call). Parts already there are skipped.
# Prints how many of the parts are staged and which are missing. Exit 1 on a part that fails its check.
set -u
C=${VERL_CARRY:-/tmp/verl-carry}; mkdir -p "$C"
for d in .vllm[0-9][0-9]; do
  [ -d "$d" ] || continue
  f=$(cd "$d" && ls part??); cp "$d/manifest.sha256" "$C/"
  [ -e "$C/$f" ] && [ "$(stat -c %s "$C/$f")" = "$(stat -c %s "$d/$f")" ] && continue
  (cd "$d" && grep " $f\$" manifest.sha256 | sha256sum -c --quiet -) || { echo "BAD $d/$f: carry it again"; exit 1; }
  cp "$d/$f" "$C/$f.tmp" && mv "$C/$f.tmp" "$C/$f"
done
[ -e "$C/manifest.sha256" ] || { echo "nothing carried: name a .vllmNN folder in carry"; exit 1; }
want=$(grep -o ' part[0-9]*$' "$C/manifest.sha256" | tr -d ' ')
missing=$(for f in $want; do [ -e "$C/$f" ] || echo "$f"; done | tr '\n' ' ')
echo "$(date -u +%T) staged $(( $(echo "$want" | wc -w) - $(echo "$missing" | wc -w) )) of $(echo "$want" | wc -w) parts;" \
  "missing: ${missing:-none}"
