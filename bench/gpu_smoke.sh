#!/usr/bin/env bash
# GPU smoke run: 2 real GRPO steps of a local model with bf16 + LoRA (+ vLLM colocate when
# vLLM is installed) against local render and score workers, then the step times.
#
#   bench/gpu_smoke.sh /path/to/model [steps=2] [generations=8]
#
# Needs `make setup` done (a .venv with the CUDA build of torch) and a GPU. It runs in the
# embedded mode (SQLite + SQLAlchemy broker in a temporary folder), so no PostgreSQL or
# Redis is needed, seeds a small pool, and leaves the studio's own data alone.
set -euo pipefail
model=${1:?usage: bench/gpu_smoke.sh /path/to/model [steps] [generations]}
steps=${2:-2}
generations=${3:-8}
cd "$(dirname "$0")/.."
py=.venv/bin/python

work=$(mktemp -d /tmp/paintapp-gpu-smoke.XXXXXX)
export PAINTAPP_VAR_DIR=$work MEDIA_ROOT=$work/media
export DATABASE_URL=sqlite:///$work/studio.sqlite3 CELERY_BROKER_URL=sqla+sqlite:///$work/broker.sqlite3
export DJANGO_SETTINGS_MODULE=paintapp.settings PYTHONUNBUFFERED=1

$py - <<'PY'
import importlib.util, torch
print("torch", torch.__version__, "| cuda", torch.cuda.is_available(),
      "|", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU",
      "| vllm", "installed" if importlib.util.find_spec("vllm") else "not installed")
PY
generation=generate
$py -c "import vllm" 2>/dev/null && generation=vllm-colocate

$py manage.py migrate -v0
$py manage.py seed_pool --count 16 --size 384 --demo-grades --in-process
$py manage.py freeze_pool smoke --curator demo-curator --eval-share 0.25

pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for spec in "train 1" "render ${RENDER_CONCURRENCY:-4}" "score 1"; do
  set -- $spec
  setsid $py -m celery -A paintapp worker -Q "$1" -c "$2" -n "smoke-$1@%h" --loglevel=WARNING \
    >"$work/worker-$1.log" 2>&1 &
  pids+=($!)
done
sleep 8

start=$(date +%s)
$py manage.py train --pool smoke --recipe hps-led --base-model "$model" --steps "$steps" --follow \
  --set num_generations="$generations" --set render_size=384 --set max_completion_length=4096 \
  --set generation="$generation" --set gradient_accumulation_steps="$generations" --set checkpoint_every=1000
echo "wall time: $(( $(date +%s) - start )) s for $steps steps (model load included)"
$py manage.py shell -c "
from training.models import Step
for s in Step.objects.order_by('step'):
    m = s.metrics
    print(f'step {s.step}: {m.get(\"ours/step_s\", 0):.1f} s  generate {m.get(\"ours/generation_s\", 0):.1f}  render {m.get(\"ours/render_s\", 0):.1f}  score {m.get(\"ours/score_s\", 0):.1f}  update {m.get(\"ours/update_s\", 0):.1f}  reward {s.reward_mean}')
"
echo "logs and data: $work"
