#!/usr/bin/env bash
# Renders a glshift report.html in headless Chromium (Debian's `chromium` package) to a PNG
# screenshot, to check that the self-contained page displays. Not part of CI.
#
#   scripts/render_report.sh RUN_DIR/report.html [OUT.png] [WIDTH] [HEIGHT]
#
# Default output: report.html's folder/report-screenshot.png, 1200 × 4000 pixels.
set -euo pipefail
html=${1:?usage: scripts/render_report.sh REPORT.html [OUT.png] [WIDTH] [HEIGHT]}
out=${2:-$(dirname "$html")/report-screenshot.png}
width=${3:-1200}
height=${4:-4000}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium not installed (apt-get install -y chromium)" >&2
  exit 0
fi
[ -f "$html" ] || { echo "$html: no such file" >&2; exit 1; }
url="file://$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
  --user-data-dir="$profile" --hide-scrollbars --window-size="$width,$height" \
  --screenshot="$(realpath -m "$out")" "$url" >/dev/null 2>&1
[ -s "$out" ] || { echo "chromium wrote no screenshot to $out" >&2; exit 1; }
echo "wrote $out"
