#!/usr/bin/env bash
# Tests of the Python package (crates/glshift-py): builds and installs it with pip (maturin,
# release profile) into a fresh virtual environment with pytest, scikit-learn and skada, and
# runs crates/glshift-py/tests. Part of the README's test command (after `cargo test`, whose
# glshift binary the real-data equality test uses; it reports SKIPPED without ../shared/data).
#
#   PYTHON=python3.12 bash scripts/test_python.sh      # another interpreter (>= 3.10)
#   GLSHIFT_PY_VENV=/path/venv bash scripts/test_python.sh   # reuse a venv (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "scripts/test_python.sh: $PY is missing or older than 3.10; set PYTHON to a Python >= 3.10" >&2
  exit 1
fi
if [ -n "${GLSHIFT_PY_VENV:-}" ]; then
  VENV=$GLSHIFT_PY_VENV
else
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  VENV=$TMP/venv
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check ./crates/glshift-py pytest scikit-learn skada
"$VENV/bin/python" -m pytest -q -rs crates/glshift-py/tests
