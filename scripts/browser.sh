#!/usr/bin/env bash
# Which Chromium the renderer uses, said out loud; Playwright's own when the machine has no real
# one. Runs after the .venv exists (make setup). Debian's `chromium` package is a real browser;
# on Ubuntu, `chromium` and `chromium-browser` are shims that install a snap, which Playwright
# cannot drive headless from a service, so they do not count.
#
#   CHROMIUM_PATH   the browser to check (default /usr/bin/chromium)
#   PLAYWRIGHT      the playwright command (default .venv/bin/playwright)
set -eu
path=${CHROMIUM_PATH:-/usr/bin/chromium}
playwright=${PLAYWRIGHT:-.venv/bin/playwright}

is_real_chromium() {
  [ -x "$1" ] || return 1
  case "$(readlink -f "$1")" in /snap/*) return 1 ;; esac
  grep -qs "snap" "$1" && [ "$(stat -c %s "$1")" -lt 100000 ] && return 1  # a shell shim that runs the snap
  "$1" --version 2>/dev/null | grep -qi "chromium"
}

if is_real_chromium "$path"; then
  echo "browser: the distribution's Chromium at $path ($("$path" --version 2>/dev/null))"
  exit 0
fi
echo "browser: no real Chromium at $path (missing, or a snap shim): installing Playwright's Chromium"
"$playwright" install --with-deps chromium
echo "browser: Playwright's Chromium (the settings use it when CHROMIUM_PATH is missing)"
