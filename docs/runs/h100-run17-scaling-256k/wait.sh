#!/usr/bin/env bash
# wait for the detached run up to $1 seconds, print progress, pack results (no weights) into $OUT
end=$(( $(date +%s) + $1 ))
while [ ! -e /tmp/scale/DONE ] && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
cat /tmp/scale/gpu.txt; tail -n 12 /tmp/scale/work-*.log; nvidia-smi --query-gpu=memory.used --format=csv
for l in /tmp/scale/work-*/logs/*.log; do echo "== $l"; grep -v -i warn "$l" | tail -n 3; done
cd /tmp/scale && tar czf "$OUT/scale.tgz" --exclude='*.safetensors' --exclude='*.bin' --exclude='*.pt' --exclude='*.pth' work-* *.log gpu.txt
ls -la "$OUT"
