#!/usr/bin/env bash
# Debian packages the studio needs: Chromium for the renderer (Playwright drives it; its own
# browser download cannot work offline), fonts, and Node.js/npm for the browser assets.
set -eu
need=()
# Chromium only where the distribution's package is a real browser (Debian); Ubuntu's is a snap
# shim, and scripts/browser.sh installs Playwright's Chromium there once the .venv exists.
if ! { command -v "${CHROMIUM_PATH:-chromium}" >/dev/null 2>&1 || [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; }; then
  if apt-cache show chromium 2>/dev/null | grep -q "^Depends:.*snapd"; then
    need+=(fonts-dejavu-core)
  else
    need+=(chromium fonts-dejavu-core)
  fi
fi
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v psql >/dev/null 2>&1 || need+=(postgresql-client)
# Only for the tests: validates docker/compose.yaml without a Docker engine.
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
[ ${#need[@]} -eq 0 ] && exit 0
echo "system-deps: installing ${need[*]}"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -q
$sudo_cmd apt-get install -y -q --no-install-recommends "${need[@]}"
