#!/usr/bin/env bash
# `make vlm-server`: serve the published judge, Qwen/Qwen3-VL-30B-A3B-Instruct, with vLLM's
# OpenAI-compatible server on a GPU box, where PAINTAPP_VLM_BASE_URL's documented default
# (http://127.0.0.1:8001/v1) finds it — port 8001, never the studio's 8000.
#
# Settings (environment or make VAR=...):
#   PAINTAPP_VLM_MODEL  the model (default Qwen/Qwen3-VL-30B-A3B-Instruct)
#   VLM_PORT            8001
#   VLM_HOST            127.0.0.1; 0.0.0.0 lets score workers on other machines reach it
#   VLM_MAX_MODEL_LEN   8192: two 600 px paintings (~350 tokens each), the criteria and a
#                       short JSON answer fit with room to spare
#   VLM_GPU_MEMORY      0.90 of the GPU's memory; ~0.5 when the trainer shares an H200
#   PAINTAPP_VLM_API_KEY  when set, the server requires it (the judge sends it)
#   VLM_EXTRA_ARGS      more `vllm serve` flags, e.g. "--quantization fp8" (half the weights'
#                       memory: the judge then fits on one H200 beside the trainer and HPSv3)
set -euo pipefail
VENV=${VENV:-.venv}
MODEL=${PAINTAPP_VLM_MODEL:-Qwen/Qwen3-VL-30B-A3B-Instruct}

if ! "$VENV/bin/python" -c 'import vllm' 2>/dev/null; then
  echo "vllm is not installed in $VENV. On a GPU box: make setup-gpu (it installs requirements-gpu.txt)" >&2
  echo "(make vlm-server serves the VLM judge; it needs a CUDA GPU with room for $MODEL)" >&2
  exit 1
fi

args=(
  serve "$MODEL"
  --host "${VLM_HOST:-127.0.0.1}" --port "${VLM_PORT:-8001}"
  --max-model-len "${VLM_MAX_MODEL_LEN:-8192}"
  --limit-mm-per-prompt '{"image": 2, "video": 0}'   # one painting and one reference per call
  --gpu-memory-utilization "${VLM_GPU_MEMORY:-0.90}"
)
if [[ -n "${VLM_EXTRA_ARGS:-}" ]]; then
  read -r -a extra <<<"$VLM_EXTRA_ARGS"
  args+=("${extra[@]}")
fi
if [[ -n "${PAINTAPP_VLM_API_KEY:-}" ]]; then
  args+=(--api-key "$PAINTAPP_VLM_API_KEY")
fi
echo "serving $MODEL on http://${VLM_HOST:-127.0.0.1}:${VLM_PORT:-8001}/v1 (set PAINTAPP_VLM_BASE_URL to it on the score workers)"
exec "$VENV/bin/vllm" "${args[@]}"
