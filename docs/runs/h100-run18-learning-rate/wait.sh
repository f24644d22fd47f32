#!/usr/bin/env bash
# wait for the detached run up to $1 seconds, print progress and each finished arm's accuracy on the gate's split
# (held-out controlled items of orders 0-3), pack results (no weights) into $OUT
end=$(( $(date +%s) + $1 ))
while [ ! -e /tmp/scale/DONE ] && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
cat /tmp/scale/gpu.txt | grep -v GGUF; tail -n 4 /tmp/scale/work-*.log; nvidia-smi --query-gpu=memory.used --format=csv
PYTHONPATH=/tmp/site python3 - <<'PY'
import glob
import pyarrow.parquet as pq
for f in sorted(glob.glob("/tmp/scale/work-*/*/eval.parquet")):
    t = pq.read_table(f).to_pylist()
    for split in ("test_orders0to3", "test_orders4to6"):
        rows = [r for r in t if r["split"] == split]
        print(f, split, len(rows), round(sum(r["correct"] for r in rows) / max(len(rows), 1), 3))
PY
cd /tmp/scale && tar czf "$OUT/scale.tgz" --exclude='*.safetensors' --exclude='*.bin' --exclude='*.pt' --exclude='*.pth' work-* *.log gpu.txt
ls -la "$OUT"
