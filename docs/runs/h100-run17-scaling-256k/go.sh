#!/usr/bin/env bash
# issue 37's scaling curve, run 17, on the GPU machine: answer-only and curriculum-rationale SFT on 256k examples
# seen, two passes over run 16's 128k-row controlled split (same release, same held-out sets), each then evaluated.
# Detached (setsid) so that it outlives one 10-minute call; results land in /tmp/scale/work-*. Start from the
# repository root.
set -u
export PYTHONPATH=/tmp/site:$PWD TOMFORGE_MODEL_CACHE=/tmp/models HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p /tmp/scale
nvidia-smi --query-gpu=name,memory.total --format=csv > /tmp/scale/gpu.txt
M=/tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf
RECIPE='{"sft_batch": 128, "sft_lr": 1e-4, "compile": null, "eval_tokens": 48}'
python3 -c "from tomforge.rl.models import materialize; print(materialize('$M'))" >> /tmp/scale/gpu.txt 2>&1
run() {  # $1: work folder, $2: arms (one after another)
  python3 -m experiments.rationale_experiment run --release .exp/release --model $M --work "/tmp/scale/$1" \
    --arms "$2" --seeds 0 --parallel 1 --recipe "$RECIPE" > "/tmp/scale/$1.log" 2>&1; echo "exit $?" >> "/tmp/scale/$1.log"
}
# two SFT processes at batch 128 (about 58 and 76 GB, compiled) fit an H200, not an H100: there (or with ALONE=1,
# when the device time left holds one arm), answer-only alone
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if [ "$mib" -gt 120000 ] && [ -z "${ALONE:-}" ]; then
  echo "side by side" >> /tmp/scale/gpu.txt
  run work-a answer-only-256k & run work-b curriculum-256k & wait
else
  echo "answer-only alone" >> /tmp/scale/gpu.txt
  run work-a answer-only-256k
fi
touch /tmp/scale/DONE
