"""Transport copy of the scaling release (run 16): the training split with only the columns SFT reads (answer-only
and the rationale forms named, by default curriculum and events); the evaluation splits as they are.

    python slim.py SRC_RELEASE DST_RELEASE [FORMS]    # FORMS: comma-separated, e.g. "steps" (run 21)
"""

import glob
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
kept_forms = sys.argv[3].split(",") if len(sys.argv) > 3 else ["curriculum", "events"]
shutil.rmtree(dst, ignore_errors=True)
for f in src.rglob("*"):
    if f.is_file() and "train_" not in f.name and "/data/all/" not in str(f):
        (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dst / f.relative_to(src))
keep = ("answer_format", "options", "answer", "answer_index", "answer_list")
files = sorted(glob.glob(str(src / "data/tomforge_gen/train_controlled-*.parquet")))
columns = ["data_source", "prompt", "ability", "reward_model", "extra_info", "answer", "rationale_text"]
t = pa.concat_tables([pq.read_table(f, columns=columns) for f in files])
rm = t.column("reward_model").to_pylist()
for r in rm:
    g = json.loads(r["ground_truth"])
    r["ground_truth"] = json.dumps({k: g.get(k) for k in keep}, sort_keys=True)
t = t.set_column(
    t.schema.get_field_index("reward_model"), "reward_model", pa.array(rm, type=t.schema.field("reward_model").type)
)
texts = t.column("rationale_text").combine_chunks()
forms = pa.StructArray.from_arrays([pc.struct_field(texts, form) for form in kept_forms], names=kept_forms)
t = t.set_column(t.schema.get_field_index("rationale_text"), "rationale_text", forms)
t = t.append_column("rationale", pa.nulls(t.num_rows, pa.string()))
out = dst / "data/tomforge_gen/train_controlled-00000-of-00001.parquet"
out.parent.mkdir(parents=True, exist_ok=True)
pq.write_table(t, out, compression="zstd", compression_level=19)
print(t.num_rows, out.stat().st_size)
