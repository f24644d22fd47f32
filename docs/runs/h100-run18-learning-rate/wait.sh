#!/usr/bin/env bash
# wait for the detached run up to $1 seconds, print progress and each finished arm's accuracy on the gate's split
# (held-out controlled items of orders 0-3), pack results (no weights) into $OUT
end=$(( $(date +%s) + $1 ))
while [ ! -e /tmp/scale/DONE ] && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
cat /tmp/scale/gpu.txt | grep -v GGUF; tail -n 4 /tmp/scale/work-*.log; nvidia-smi --query-gpu=memory.used --format=csv
PYTHONPATH=/tmp/site python3 "$(dirname "$0")/best_lr.py" /tmp/scale --all
cd /tmp/scale && tar czf "$OUT/scale.tgz" --exclude='*.safetensors' --exclude='*.bin' --exclude='*.pt' --exclude='*.pth' work-* *.log gpu.txt
ls -la "$OUT"
