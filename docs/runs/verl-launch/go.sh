#!/usr/bin/env bash
# Device call 4 (README.md), from the repository root: join and check the carried parts, install verl 0.9.1 and its
# missing needs into /tmp/verl-site (transformers 5.10.4 there shadows the machine's 5.17 for verl's processes only),
# convert the SmolLM2 gguf to a plain folder, run the contract pre-flight (rl/verl_probe.py) on the real tokenizer,
# then a short verl GRPO job (STEPS, default 5) through `python -m tomforge.rl.launch verl`. Logs go to $OUT.
set -u
R=$PWD; C=/tmp/verl-carry; SITE=/tmp/verl-site; O=${OUT:-/tmp/verl-out}; mkdir -p "$O"
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOMFORGE_MODEL_CACHE=/tmp/models RAY_DEDUP_LOGS=0
bash docs/runs/verl-launch/stage.sh > "$O/stage.txt" 2>&1 || exit 1
{ nvidia-smi --query-gpu=name,memory.total --format=csv; python3 --version; } > "$O/machine.txt" 2>&1
ray=$(cut -d' ' -f3 < $C/ray.sha256)
cat $C/ray.part1 $C/ray.part2 > "$C/$ray" && (cd $C && sha256sum -c ray.sha256) >> "$O/machine.txt" || exit 2
mkdir -p /tmp/m && cat $C/part1 $C/part2 > /tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  /tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf" \
  | sha256sum -c >> "$O/machine.txt" || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $C/gguf-*.whl || exit 4
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE \
  $(ls $C/*.whl | grep -v '/gguf-') > "$O/install.txt" 2>&1 || exit 5
# the conversion runs under the machine's transformers (5.17) with the gguf package; verl reads the folder it writes
model=$(PYTHONPATH=/tmp/site:$R python3 -m tomforge.rl.models /tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf | tail -1)
echo "model folder: $model" >> "$O/machine.txt"
export PYTHONPATH=$SITE:$R
python3 -c "import verl, transformers, ray, torch; print('verl', verl.__version__, 'transformers', transformers.__version__,
'ray', ray.__version__, 'torch', torch.__version__)" >> "$O/machine.txt" 2>&1
python3 -c "import vllm; print('vllm', vllm.__version__)" >> "$O/machine.txt" 2>&1
mkdir -p /tmp/verl-data
python3 - "$model" > "$O/settings.json" <<'PY'
import json, os, sys
from dataclasses import asdict
from tomforge.rl.verl_backend import VerlSettings
steps = int(os.environ.get("STEPS", "5"))
s = VerlSettings(model=sys.argv[1], train_files=["/tmp/verl-data/tomforge_gen/train.parquet"],
                 val_files=["/tmp/verl-data/tomforge_gen/test.parquet"], n_gpus_per_node=1, total_training_steps=steps,
                 train_batch_size=16, ppo_mini_batch_size=16, micro_batch_size_per_gpu=4, rollout_n=4,
                 rollout_name=os.environ.get("ROLLOUT", "vllm"), gpu_memory_utilization=0.4, max_prompt_length=1024,
                 max_response_length=256, learning_rate=1e-6, save_freq=steps, test_freq=steps,
                 output_dir="/tmp/verl-ckpt", experiment_name="tom-grpo-smollm2",
                 extra={"algorithm.adv_estimator": "grpo", "actor_rollout_ref.model.use_remove_padding": False})
print(json.dumps(asdict(s)))
PY
# pre-flight: verl's config, dataset class and source facts on the real tokenizer (no completions scored here)
python3 - "$O/settings.json" > /dev/null <<'PY'
import json, sys
from pathlib import Path
from tomforge.rl.release import SplitRef, write_rl_parquet
from tomforge.rl.verl_backend import VerlSettings, compose_overrides
s = VerlSettings(**json.loads(Path(sys.argv[1]).read_text()))
for split in ("tomforge_gen/train", "tomforge_gen/test"):
    write_rl_parquet(Path("/tmp/verl-carry/release"), SplitRef.parse(split), Path("/tmp/verl-data"))
Path("/tmp/verl-data/overrides.json").write_text(json.dumps(compose_overrides(s)))
PY
python3 -m tomforge.rl.verl_probe --overrides-json /tmp/verl-data/overrides.json --out "$O/preflight.json" \
  > "$O/preflight.log" 2>&1; echo "preflight exit $?" >> "$O/machine.txt"
timeout "${VERL_TIMEOUT:-420}" python3 -m tomforge.rl.launch verl --dataset /tmp/verl-carry/release \
  --train tomforge_gen/train --val tomforge_gen/test --data-dir /tmp/verl-data \
  --settings-json "$(cat "$O/settings.json")" > "$O/verl.log" 2>&1
echo "verl exit $?" >> "$O/machine.txt"
grep -n "Error\|error:" "$O/verl.log" | tail -5 >> "$O/machine.txt"
cat "$O/machine.txt"
