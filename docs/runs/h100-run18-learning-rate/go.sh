#!/usr/bin/env bash
# issue 37, run 18: does a larger SFT learning rate let answer-only SFT learn its training task sooner?
# Runs 15-17 used lr 1e-4 (cosine, 10 warm-up steps, batch 128) and reached 0.386 (64k), 0.594 (128k), 0.700 (256k
# seen) on the learning gate. Phase 1: answer-only on 64k examples at lr 3e-4 and 1e-3. Phase 2: the better of the
# two (accuracy on the gate's split, best_lr.py) on 128k examples, and on a card of > 120 GB beside it 64k at the
# next rate out (3e-3 when 1e-3 won, 5e-4 otherwise). One SFT + eval job per ARM:LR, in its own work folder
# /tmp/scale/work-ARM-lrLR; two at a time on a card of > 120 GB, else one after another. Detached (setsid) so it
# outlives a 10-minute call; touches /tmp/scale/DONE at the end. Start from the root of a copy of the repository.
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
    --arms "$arm" --seeds "${SEEDS:-0}" --parallel 1 --recipe "$recipe" > "/tmp/scale/$w.log" 2>&1; echo "exit $?" >> "/tmp/scale/$w.log"
  echo "$(date -u +%T) end $w" >> /tmp/scale/gpu.txt
}
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
pair() {  # $1 and, when given, $2: side by side on a large card, else one after another
  if [ "$mib" -gt 120000 ]; then run "$1" & { [ -n "${2:-}" ] && run "$2"; } & wait
  else run "$1"; [ -n "${2:-}" ] && run "$2"; fi
}
# PHASE1 (two ARM:LR) replaces phase 1's pair; PHASE2=no skips phase 2 (when the device time left holds one pair); SEEDS (default 0) the seeds
# shellcheck disable=SC2086
pair ${PHASE1:-answer-only-64k:1e-3 answer-only-64k:3e-4}
if [ "${PHASE2:-yes}" = no ]; then touch /tmp/scale/DONE; exit 0; fi
best=$(python3 "$(dirname "$0")/best_lr.py" /tmp/scale 2>> /tmp/scale/gpu.txt); best=${best:-3e-4}
echo "$(date -u +%T) phase 2: best of phase 1: lr $best" >> /tmp/scale/gpu.txt
next=$([ "$best" = 1e-3 ] && echo 3e-3 || echo 5e-4)
if [ "$mib" -gt 120000 ]; then pair "answer-only-128k:$best" "answer-only-64k:$next"; else pair "answer-only-128k:$best"; fi
touch /tmp/scale/DONE
