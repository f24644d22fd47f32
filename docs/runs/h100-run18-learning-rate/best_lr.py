"""Run 18, phase 2's choice: the learning rate whose 64k answer-only arm scored best on the gate's split (held-out
controlled items of orders 0-3), read from each work folder's eval.parquet; prints it as go.sh spelled it."""

import glob
import sys

import pyarrow.parquet as pq

scores = {}
for path in glob.glob(f"{sys.argv[1]}/work-answer-only-64k-lr*/*/eval.parquet"):
    lr = path.split("/work-answer-only-64k-lr")[1].split("/")[0]
    rows = [r for r in pq.read_table(path).to_pylist() if r["split"] == "test_orders0to3"]
    scores[lr] = sum(r["correct"] for r in rows) / max(len(rows), 1)
    print(f"lr {lr}: {scores[lr]:.3f} on {len(rows)} items", file=sys.stderr)
print(max(scores, key=lambda lr: scores[lr]) if scores else "3e-4")
