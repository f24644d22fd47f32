#!/usr/bin/env bash
# The last device call (README.md), from the repository root, after stage.sh has staged every part: join and check
# the parts, install the wheels into /tmp/verl-site (pip --no-index --no-deps --target: transformers 5.10.4 there
# shadows the machine's 5.17 for verl's processes only), check every need of what was installed (check_needs.py),
# convert the SmolLM2 gguf to a plain folder (under the machine's transformers, as run 18 did), run the contract
# pre-flight (rl/verl_probe.py) on the real tokenizer, then start verl's GRPO job (STEPS, default 100; the settings
# are tomforge.rl.verl_backend.one_gpu_grpo_settings, vLLM rollout) detached (setsid), so it outlives this call, and
# wait up to WAIT seconds (default 120: the steps before take minutes of the 600-s call) for it with wait.sh, which
# packs the logs into $OUT. Later calls: `bash docs/runs/verl-launch/wait.sh 540`.
set -u
# the VERL_* variables move the folders, for a dry run on the CPU machine (README.md); the GPU run leaves them unset
R=$PWD; C=${VERL_CARRY:-/tmp/verl-carry}; X=$C/x; SITE=${VERL_SITE:-/tmp/verl-site}; RUN=${VERL_RUN:-/tmp/verl-run}
G=${VERL_GGUF_SITE:-/tmp/site}; D=docs/runs/verl-launch
mkdir -p "$RUN" "$X"; M="$RUN/machine.txt"; t0=$(date +%s)
# no FlashInfer sampler: its kernels come from flashinfer-cubin or a JIT build (SKIP may leave the cubins out)
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOMFORGE_MODEL_CACHE=/tmp/models RAY_DEDUP_LOGS=0 VLLM_NO_USAGE_STATS=1 \
  VLLM_USE_FLASHINFER_SAMPLER=0
step() { echo "$(date -u +%T) +$(( $(date +%s) - t0 ))s $*" >> "$M"; }
fail() { step "STOP: $*"; cat "$M"; bash $D/wait.sh 0; exit 1; }
{ nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; python3 --version; ldd --version | head -1
  python3 -m pip list 2>/dev/null | grep -iE '^(numpy|numba|llvmlite|setuptools|protobuf|pillow|opencv-python-headless|cuda-bindings|cuda-core|cuda-pathfinder|typing.extensions) '
} > "$M" 2>&1
bash $D/stage.sh >> "$M" 2>&1 || fail "stage"
(cd $C && grep ' part[0-9]*$' manifest.sha256 | sha256sum -c --quiet -) || fail "a part is missing or damaged"
cat $C/part?? > $C/payload.tar && (cd $C && grep ' payload.tar$' manifest.sha256 | sha256sum -c -) >> "$M" 2>&1 \
  || fail "the joined tar's sha256"
tar xf $C/payload.tar -C $X && rm -f $C/payload.tar $C/part?? && step "joined and unpacked"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $G $X/gguf/*.whl || fail gguf
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE $X/wheels/*.whl \
  > "$RUN/install.txt" 2>&1 || fail "pip install (install.txt)"
step "installed $(ls $X/wheels | wc -l) wheels into $SITE"
# the conversion runs under the machine's transformers (5.17) with the gguf package; verl reads the folder it writes
model=$(PYTHONPATH=$G:$R python3 -m tomforge.rl.models $X/model/SmolLM2-135M-Instruct.Q4_1.gguf 2>> "$RUN/convert.log" \
  | tail -1); [ -d "$model" ] || fail "gguf conversion (convert.log)"; step "model folder $model"
# PYTHONPATH does not read .pth files: add the folders the carried ones name (nvidia-cutlass-dsl's)
pth=$(for f in $SITE/*.pth; do [ -e "$f" ] && grep -v '^\(import\|#\)' "$f" | sed "s|^|$SITE/|"; done | tr '\n' ':')
export PYTHONPATH=$SITE:$pth$R
python3 $D/check_needs.py --installed $SITE > "$RUN/needs.txt" 2>&1; step "needs: $(head -1 "$RUN/needs.txt")"
python3 -c "import torch, transformers, verl, vllm, ray; print('torch', torch.__version__, 'transformers',
transformers.__version__, 'verl', verl.__version__, 'vllm', vllm.__version__, 'ray', ray.__version__)" >> "$M" 2>&1 \
  || fail "imports"
mkdir -p /tmp/verl-data
python3 - "$model" > "$RUN/settings.json" <<'PY' || fail "settings"
import json, os, sys
from dataclasses import asdict
from tomforge.rl.verl_backend import one_gpu_grpo_settings
print(json.dumps(asdict(one_gpu_grpo_settings(sys.argv[1], "/tmp/verl-data", steps=int(os.environ.get("STEPS", "100"))))))
PY
python3 - "$RUN/settings.json" "$X/release" <<'PY' || fail "parquet"
import json, sys
from pathlib import Path
from tomforge.rl.release import SplitRef, write_rl_parquet
from tomforge.rl.verl_backend import VerlSettings, compose_overrides
s = VerlSettings(**json.loads(Path(sys.argv[1]).read_text()))
for split in ("tomforge_gen/train", "tomforge_gen/test"):
    write_rl_parquet(Path(sys.argv[2]), SplitRef.parse(split), Path("/tmp/verl-data"))
Path("/tmp/verl-data/overrides.json").write_text(json.dumps(compose_overrides(s)))
PY
python3 -m tomforge.rl.verl_probe --overrides-json /tmp/verl-data/overrides.json --out "$RUN/preflight.json" \
  > "$RUN/preflight.log" 2>&1; step "preflight exit $?"
cat > "$RUN/train.sh" <<SH
cd $R && timeout ${VERL_TIMEOUT:-1500} python3 -m tomforge.rl.launch verl --dataset $X/release \\
  --train tomforge_gen/train --val tomforge_gen/test --data-dir /tmp/verl-data \\
  --settings-json "\$(cat $RUN/settings.json)" > $RUN/verl.log 2>&1; echo \$? > $RUN/EXIT
SH
rm -f "$RUN/EXIT"; setsid nohup bash "$RUN/train.sh" > /dev/null 2>&1 < /dev/null & step "verl started (detached)"
bash $D/wait.sh "${WAIT:-120}"
