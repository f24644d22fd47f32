#!/usr/bin/env bash
# issue 37, run 18: does a larger SFT learning rate let answer-only SFT learn its training task sooner?
# Runs 15-17 used lr 1e-4 (cosine, 10 warm-up steps, batch 128) and reached 0.386 (64k), 0.594 (128k), 0.700 (256k
# seen) on the learning gate. Each argument is ARM:LR (e.g. answer-only-64k:3e-4): one SFT + eval job per argument,
# in its own work folder /tmp/scale/work-ARM-lrLR; side by side (two at a time) on a card of > 120 GB, else one after
# another. Detached (setsid) so it outlives a 10-minute call; touches /tmp/scale/DONE at the end. Start from the root
# of a copy of the repository.
set -u
export PYTHONPATH=/tmp/site:$PWD TOMFORGE_MODEL_CACHE=/tmp/models HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p /tmp/scale && rm -f /tmp/scale/DONE
nvidia-smi --query-gpu=name,memory.total --format=csv > /tmp/scale/gpu.txt
M=/tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf
python3 -c "from tomforge.rl.models import materialize; print(materialize('$M'))" >> /tmp/scale/gpu.txt 2>&1
run() {  # $1: ARM:LR
  arm=${1%%:*}; lr=${1#*:}; w="work-$arm-lr$lr"
  recipe="{\"sft_batch\": 128, \"sft_lr\": $lr, \"compile\": null, \"eval_tokens\": 48}"
  echo "$(date -u +%T) start $w $recipe" >> /tmp/scale/gpu.txt
  python3 -m experiments.rationale_experiment run --release .exp/release --model $M --work "/tmp/scale/$w" \
    --arms "$arm" --seeds 0 --parallel 1 --recipe "$recipe" > "/tmp/scale/$w.log" 2>&1; echo "exit $?" >> "/tmp/scale/$w.log"
  echo "$(date -u +%T) end $w" >> /tmp/scale/gpu.txt
}
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if [ "$mib" -gt 120000 ]; then
  while [ $# -gt 0 ]; do run "$1" & [ $# -gt 1 ] && run "$2" & wait; shift; [ $# -gt 0 ] && shift; done
else
  for job in "$@"; do run "$job"; done
fi
touch /tmp/scale/DONE
