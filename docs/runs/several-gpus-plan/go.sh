#!/usr/bin/env bash
# issue 41's measurement, NOT RUN (no multi-GPU kind was lent on 2026-12-07): the same SFT warm-up + RLOO run and
# the same evaluation on 1 GPU and on N GPUs of one host, in the same call, then tokens/s per GPU and the scaling
# efficiency (tokens/s on N GPUs / (N x tokens/s on 1 GPU)). Run from the repository root on an nvidia-h100-x2
# (or -x4/-x8) machine: `bash docs/runs/several-gpus-plan/go.sh`; results in /tmp/sg/.
set -u
# NVLink multicast off, as the device README asks: it can take the host's shared GPUs out of service
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=$PWD TOMFORGE_MODEL_CACHE=/tmp/models HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p /tmp/sg
nvidia-smi --query-gpu=name,memory.total --format=csv > /tmp/sg/gpu.txt
GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
M=${MODEL:-/tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf}   # carried as in docs/runs/verl-launch (two calls)
[ -d /tmp/sg/release ] || python3 -m experiments.data --out /tmp/sg/release --n 4000 --n-higher 200 > /tmp/sg/data.log 2>&1
for N in 1 2 4 8; do
  [ "$N" -le "$GPUS" ] || break
  # the same global batch on every N: 64 completions a step (8 prompts x 8 samples), 64 examples an SFT step
  B=$((64 / N))
  python3 -m tomforge.flows.cli train --dataset /tmp/sg/release --model "$M" --train tomforge_gen/train \
    --gpus "$N" --sft-steps 300 --max-steps 60 --num-generations 8 --batch-size "$B" --bf16 \
    --output-dir "/tmp/sg/rl-$N" > "/tmp/sg/train-$N.log" 2>&1; echo "exit $?" >> "/tmp/sg/train-$N.log"
  python3 -m tomforge.flows.cli eval --model "/tmp/sg/rl-$N" --dataset /tmp/sg/release --split tomforge_gen/test \
    --in-distribution tomforge_gen --no-store --gpus "$N" --out "/tmp/sg/eval-$N" > "/tmp/sg/eval-$N.log" 2>&1
  echo "exit $?" >> "/tmp/sg/eval-$N.log"
done
# per N: SFT and RL tokens/s (the launch's result line: tokens over all processes, the first process's seconds),
# per GPU, and the efficiency against N=1; eval tokens/s from summary.json (the slowest process's seconds)
python3 - <<'PY' > /tmp/sg/scaling.json
import json, pathlib
rows = {}
for log in sorted(pathlib.Path("/tmp/sg").glob("train-*.log")):
    n = int(log.stem.split("-")[1])
    line = next((json.loads(l) for l in log.read_text().splitlines() if l.startswith('{"')), None)
    summary = pathlib.Path(f"/tmp/sg/eval-{n}/summary.json")
    gen = json.loads(summary.read_text())["generation"] if summary.exists() else {}
    if line:
        rows[n] = {"sft_tokens_per_s": line["sft"]["tokens"] / line["sft"]["seconds"],
                   "rl_tokens_per_s": line["tokens"] / line["seconds"], "eval_tokens_per_s": gen.get("tokens_per_s"),
                   "sft_loss": line["sft"]["train_loss"], "rl_loss": line["train_loss"]}
for n, r in rows.items():
    for key in ("sft_tokens_per_s", "rl_tokens_per_s", "eval_tokens_per_s"):
        if r.get(key) and rows.get(1, {}).get(key):
            r[key.replace("tokens_per_s", "per_gpu")] = r[key] / n
            r[key.replace("tokens_per_s", "efficiency")] = r[key] / (n * rows[1][key])
print(json.dumps(rows, indent=1))
PY
touch /tmp/sg/DONE
