"""Run 18's reading of its own results on the device, from each work folder's eval.parquet: accuracy on the gate's
split (held-out controlled items of orders 0-3) and on orders 4-6.

    python3 best_lr.py /tmp/scale          # phase 2's choice: the rate whose 64k arm scored best on the gate's split
    python3 best_lr.py /tmp/scale --all    # every finished arm's accuracy on both splits (wait.sh)
"""

import glob
import sys

import pyarrow.parquet as pq


def accuracy(path: str, split: str) -> tuple[float, int]:
    """Share correct on `split` of one eval.parquet, and the items counted."""
    rows = [r for r in pq.read_table(path, columns=["split", "correct"]).to_pylist() if r["split"] == split]
    return sum(r["correct"] for r in rows) / max(len(rows), 1), len(rows)


if "--all" in sys.argv:
    for path in sorted(glob.glob(f"{sys.argv[1]}/work-*/*/eval.parquet")):
        for split in ("test_orders0to3", "test_orders4to6"):
            share, n = accuracy(path, split)
            print(path, split, n, round(share, 3))
    sys.exit(0)
scores = {}
for path in glob.glob(f"{sys.argv[1]}/work-answer-only-64k-lr*/*/eval.parquet"):
    lr = path.split("/work-answer-only-64k-lr")[1].split("/")[0]
    scores[lr], n = accuracy(path, "test_orders0to3")
    print(f"lr {lr}: {scores[lr]:.3f} on {n} items", file=sys.stderr)
print(max(scores, key=lambda lr: scores[lr]) if scores else "3e-4")
