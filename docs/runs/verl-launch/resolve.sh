#!/usr/bin/env bash
# Issue 40, on the CPU machine (internet for PyPI), from the repository root: resolve what vLLM 0.24.0 and verl 0.9.1
# need on the GPU machine (Python 3.12, manylinux x86-64) against what its image holds, and download the wheels the
# image lacks into $WHEELS/vllm-set (outside git). Needs a pip that reads PyPI's metadata files ($PIP, default a
# Python 3.12 venv with pip >= 25, e.g. `python3.12 -m venv /tmp/v40/pip312 && /tmp/v40/pip312/bin/pip install -U pip`;
# pip 23.2 downloads every wheel to resolve, torch's CUDA wheels included).
# The manylinux tags go up to 2_31: llguidance 1.7 has no older x86-64 wheel (the image's glibc is not known here;
# go.sh records it). antlr4-python3-runtime 4.9.3 (hydra-core's) is an sdist on PyPI: its wheel, built once here,
# lies in $WHEELS/verl and is found there (--find-links); without it pip falls back to hydra-core 0.11.
set -eu
WHEELS=${WHEELS:-/work/verl-wheels}
PIP=${PIP:-/tmp/v40/pip312/bin/python -m pip}
D=docs/runs/verl-launch; T=${TMPDIR:-/tmp}/verl-resolve; mkdir -p "$T" "$WHEELS/vllm-set"
P="--python-version 3.12 --implementation cp --only-binary=:all:"
for n in 31 30 29 28 27 26 25 24 23 22 21 20 19 18 17 12 5; do P="$P --platform manylinux_2_${n}_x86_64"; done
P="$P --platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64"
L="--find-links $WHEELS/verl --find-links $WHEELS/vllm-probe"
# shellcheck disable=SC2086
$PIP install --dry-run --ignore-installed --report "$T/report.json" --target "$T/x" $P $L -c $D/image-constraints.txt \
  vllm==0.24.0 verl==0.9.1 TransferQueue==0.1.11 cachetools > "$T/resolve.log" 2>&1
python3 $D/lacks.py "$T/report.json" $D/image-packages.txt > "$T/lacks.txt"
# shellcheck disable=SC2086
$PIP download --no-deps $P $L -d "$WHEELS/vllm-set" -r "$T/lacks.txt" > "$T/download.log" 2>&1
# the set installs as go.sh installs it (one version of each, tags of Python 3.12 x86-64), and every need holds
# shellcheck disable=SC2086
$PIP install --dry-run --no-index --no-deps --ignore-installed --target "$T/y" $P "$WHEELS"/vllm-set/*.whl \
  > "$T/no-index.log" 2>&1 && tail -1 "$T/no-index.log"
python3 $D/check_needs.py --wheels "$WHEELS/vllm-set" --image $D/image-packages.txt --pins $D/image-constraints.txt \
  > "$T/needs.txt"; head -1 "$T/needs.txt"
echo "$(wc -l < "$T/lacks.txt") wheels, $(du -cb "$WHEELS"/vllm-set/*.whl | tail -1 | cut -f1) bytes"
