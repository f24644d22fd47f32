#!/usr/bin/env bash
# Wait up to $1 seconds for the detached verl job of go.sh (until /tmp/verl-run/EXIT), then print where it stands
# and pack its logs (no checkpoints) into $OUT: machine.txt, steps.txt (verl's console lines, one per step), and
# verl-logs.tgz (every log and report of /tmp/verl-run, the tails of Ray's worker error logs).
RUN=${VERL_RUN:-/tmp/verl-run}; O=${OUT:-$RUN/out}; mkdir -p "$O"
end=$(( $(date +%s) + ${1:-0} ))
while [ ! -e $RUN/EXIT ] && [ "$(date +%s)" -lt "$end" ]; do sleep 10; done
grep -a 'step:[0-9]' $RUN/verl.log > $RUN/steps.txt 2>/dev/null
for f in /tmp/ray/session_latest/logs/*.err; do [ -s "$f" ] && { echo "== $f"; tail -n 40 "$f"; }; done > $RUN/ray-err.txt 2>/dev/null
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader >> $RUN/machine.txt 2>&1
echo "$(date -u +%T) verl: $(if [ -e $RUN/EXIT ]; then echo "exit $(cat $RUN/EXIT)"; elif [ -e $RUN/train.sh ]; then echo running; else echo "not started"; fi), $(wc -l < $RUN/steps.txt 2>/dev/null || echo 0) step lines" \
  | tee -a $RUN/machine.txt
cp $RUN/machine.txt $RUN/steps.txt "$O/" 2>/dev/null
(cd $RUN && tar czf "$O/verl-logs.tgz" --exclude=out ./*.txt ./*.log ./*.json ./*.sh 2>/dev/null)
cat $RUN/machine.txt; tail -n 3 $RUN/steps.txt 2>/dev/null
grep -an 'Error\|error:' $RUN/verl.log 2>/dev/null | tail -n 8
