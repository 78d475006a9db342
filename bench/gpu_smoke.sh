#!/usr/bin/env bash
# GPU smoke run: a published reward preset (VLM judge + HPSv3) on a small real model, 2 GRPO
# steps per generation backend, then each backend's step split (generate / render / score /
# update seconds). Ready to run in under 10 minutes on one H200 once the models are cached.
#
#   bench/gpu_smoke.sh [--dry-run] [MODEL] [STEPS]
#
#   --dry-run prints the plan (models to fetch, servers, workers, one run per backend) and exits.
#
#   MODEL     the policy, a Hub name or a folder (default Qwen/Qwen3-0.6B: small, real, quick)
#   STEPS     GRPO steps per backend (default 2)
#   RECIPE    a published preset: judge-led (default), hps-led or hps-only
#   BACKENDS  generation backends to compare (default: "generate vllm-colocate" where vllm is
#             installed, else "generate"; add continuous-batching to measure it too)
#   JUDGE     the VLM judge served here when PAINTAPP_VLM_BASE_URL is not set (default
#             Qwen/Qwen3-VL-2B-Instruct: a small judge of the published judge's family, so the
#             smoke fits beside the policy; the published one is Qwen/Qwen3-VL-30B-A3B-Instruct)
#   HPSv3     PAINTAPP_HPSV3_CHECKPOINT, or MizzenAI/HPSv3's HPSv3.safetensors from the cache;
#             its base model PAINTAPP_HPSV3_BASE_MODEL (default Qwen/Qwen2-VL-7B-Instruct)
#
# Needs `make setup-gpu` done. Models are fetched first with `manage.py fetch_model` (a progress
# bar; nothing is downloaded when they are cached, so fetch them before the clock matters). It
# runs in the embedded mode (SQLite + SQLAlchemy broker in a temporary folder), so no
# PostgreSQL or Redis is needed, seeds a small pool, and leaves the studio's own data alone.
set -euo pipefail
dry_run=0
if [[ "${1:-}" == "--dry-run" ]]; then dry_run=1; shift; fi
model=${1:-Qwen/Qwen3-0.6B}
steps=${2:-2}
recipe=${RECIPE:-judge-led}
judge=${JUDGE:-Qwen/Qwen3-VL-2B-Instruct}
cd "$(dirname "$0")/.."
py=.venv/bin/python

if (( dry_run )); then
  backends=${BACKENDS:-"generate, plus vllm-colocate where vllm is installed"}
  cat <<PLAN
GPU smoke plan (dry run: nothing is fetched, started or trained)
  policy      $model, $steps GRPO steps per backend, recipe $recipe, renders at 384 px
  fetch       $model; ${PAINTAPP_VLM_BASE_URL:+(judge served at $PAINTAPP_VLM_BASE_URL)}${PAINTAPP_VLM_BASE_URL:-the VLM judge $judge}; MizzenAI/HPSv3 and ${PAINTAPP_HPSV3_BASE_MODEL:-Qwen/Qwen2-VL-7B-Instruct}
  judge       ${PAINTAPP_VLM_BASE_URL:-scripts/vlm-server.sh on 127.0.0.1:8001 with 0.25 of the GPU}
  data        embedded mode in a temporary folder: SQLite, SQLAlchemy broker, a 16-painting pool "smoke"
  workers     train (1 process, a fresh child per run: --max-tasks-per-child=1), render (${RENDER_CONCURRENCY:-12}), score (${SCORE_CONCURRENCY:-2})
  backends    $backends: one run each, in turn, each in its own train process;
              GPU memory is read before each and must be back within 2 GiB of the first reading
  report      seconds per step: generate / render / score / update, and the mean reward
PLAN
  exit 0
fi

gpu_used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

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
if [[ -z "${BACKENDS:-}" ]]; then
  BACKENDS=generate
  $py -c "import vllm" 2>/dev/null && BACKENDS="generate vllm-colocate"
fi

pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
started=$(date +%s)

# --- the published reward's parts ------------------------------------------------------------
[[ -d "$model" ]] || $py manage.py fetch_model "$model"
if [[ "$recipe" != "hps-only" && -z "${PAINTAPP_VLM_BASE_URL:-}" ]]; then
  $py manage.py fetch_model "$judge"
  # A quarter of the GPU for the judge; the trainer and its vLLM share the rest.
  PAINTAPP_VLM_MODEL="$judge" VLM_GPU_MEMORY=0.25 VLM_MAX_MODEL_LEN=4096 \
    setsid scripts/vlm-server.sh >"$work/vlm-server.log" 2>&1 &
  pids+=($!)
  export PAINTAPP_VLM_BASE_URL=http://127.0.0.1:8001/v1 PAINTAPP_VLM_MODEL="$judge"
  echo "waiting for the VLM judge ($judge) on $PAINTAPP_VLM_BASE_URL …"
  for _ in $(seq 300); do
    curl -sf "$PAINTAPP_VLM_BASE_URL/models" >/dev/null && break
    kill -0 "${pids[-1]}" 2>/dev/null || { tail -20 "$work/vlm-server.log"; exit 1; }
    sleep 1
  done
fi
if [[ -z "${PAINTAPP_HPSV3_CHECKPOINT:-}" ]]; then
  $py manage.py fetch_model MizzenAI/HPSv3
  export PAINTAPP_HPSV3_CHECKPOINT=$($py -c "from huggingface_hub import hf_hub_download as d; print(d('MizzenAI/HPSv3', 'HPSv3.safetensors'))")
fi
hps_base=${PAINTAPP_HPSV3_BASE_MODEL:-Qwen/Qwen2-VL-7B-Instruct}
[[ -d "$hps_base" ]] || $py manage.py fetch_model "$hps_base"

# --- a small pool and the workers --------------------------------------------------------------
$py manage.py migrate -v0
$py manage.py demo_curator >/dev/null
$py manage.py seed_pool --count 16 --size 384 --demo-grades --in-process
$py manage.py freeze_pool smoke --curator demo-curator --eval-share 0.25
for spec in "train 1" "render ${RENDER_CONCURRENCY:-12}" "score ${SCORE_CONCURRENCY:-2}"; do
  set -- $spec
  extra=""
  [[ "$1" == train ]] && extra="--max-tasks-per-child=1"  # each backend's run in a fresh process
  setsid $py -m celery -A paintapp worker -Q "$1" -c "$2" -n "smoke-$1@%h" --loglevel=WARNING $extra \
    >"$work/worker-$1.log" 2>&1 &
  pids+=($!)
done
sleep 8
$py manage.py recipes --pool smoke   # every part of $recipe must say it is reachable

# --- two steps per backend ---------------------------------------------------------------------
baseline=$(gpu_used_mib)
for backend in $BACKENDS; do
  # vLLM keeps an engine's memory until its process ends: the run before must have handed it back.
  for _ in $(seq 30); do (( $(gpu_used_mib) - baseline < 2048 )) && break; sleep 2; done
  used=$(gpu_used_mib)
  echo "== $backend (GPU memory in use: $used MiB; $baseline MiB before the first run)"
  (( used - baseline < 2048 )) || echo "WARNING: $(( used - baseline )) MiB more than before the first run: a process kept the last run's memory"
  begin=$(date +%s)
  $py manage.py train --pool smoke --recipe "$recipe" --base-model "$model" --steps "$steps" --follow \
    --name "smoke $backend" --set generation="$backend" --set render_size=384 \
    --set max_completion_length=4096 --set checkpoint_every=1000 --set eval_samples_per_subject=1 \
    --set vllm_gpu_memory_utilization=0.25 --set vllm_enable_sleep_mode=true \
    || echo "$backend: the run did not finish (see its page or $work/worker-train.log)"
  echo "$backend: $(( $(date +%s) - begin )) s wall for $steps steps (model load and evaluation included)"
done

$py manage.py shell -c "
from training.models import Run
from training import metrics as k
print(f'{\"backend\":<20} {\"step\":>4} {\"total s\":>8} {\"generate\":>9} {\"render\":>7} {\"score\":>6} {\"update\":>7} {\"reward\":>7}')
for run in Run.objects.order_by('id'):
    for s in run.steps.order_by('step'):
        m = s.metrics
        f = lambda key: f'{m[key]:.1f}' if m.get(key) is not None else '-'
        reward = '-' if s.reward_mean is None else f'{s.reward_mean:.3f}'
        print(f'{run.name[6:]:<20} {s.step:>4} {f(k.STEP_S):>8} {f(k.GENERATION_S):>9} {f(k.RENDER_S):>7} '
              f'{f(k.SCORE_S):>6} {f(k.UPDATE_S):>7} {reward:>7}')
"
echo "total: $(( $(date +%s) - started )) s; logs and data: $work"
