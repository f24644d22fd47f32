#!/usr/bin/env bash
# issue 37, run 21: the `steps` rationale form (order k = k applications of one local step, item 3) on the scaling
# curve, SFT at lr 1e-4 (runs 15-20's rate), batch 128, seed 0. ARMS (default: steps-128k then steps-64k) run one
# after another on any card: side by side on an H200 a rationale arm's trainer ran out of memory and lowered its
# batch (run 16's caveat). One SFT + evaluation job per arm in /tmp/scale/work-ARM-lr1e-4 (the layout of run 18's
# wait.sh and best_lr.py). Detached (setsid) so it outlives a 10-minute call; touches /tmp/scale/DONE at the end.
# Start from the root of a copy of the repository holding the slimmed release in .exp/release (run 16's slim.py with the forms "steps").
set -u
export PYTHONPATH=/tmp/site:$PWD TOMFORGE_MODEL_CACHE=/tmp/models HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p /tmp/scale && rm -f /tmp/scale/DONE
nvidia-smi --query-gpu=name,memory.total --format=csv > /tmp/scale/gpu.txt
M=/tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf
python3 -c "from tomforge.rl.models import materialize; print(materialize('$M'))" >> /tmp/scale/gpu.txt 2>&1
recipe='{"sft_batch": 128, "sft_lr": 1e-4, "compile": null, "eval_tokens": 48}'
for arm in ${ARMS:-steps-128k steps-64k}; do
  w="work-$arm-lr1e-4"
  echo "$(date -u +%T) start $w $recipe" >> /tmp/scale/gpu.txt
  python3 -m experiments.rationale_experiment run --release .exp/release --model $M --work "/tmp/scale/$w" \
    --arms "$arm" --seeds "${SEEDS:-0}" --parallel 1 --recipe "$recipe" > "/tmp/scale/$w.log" 2>&1; echo "exit $?" >> "/tmp/scale/$w.log"
  echo "$(date -u +%T) end $w" >> /tmp/scale/gpu.txt
done
touch /tmp/scale/DONE
