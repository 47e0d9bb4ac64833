#!/usr/bin/env bash
# Tests of the Python package (crates/glshift-py) in a fresh virtual environment with pytest,
# scikit-learn and skada: crates/glshift-py/tests. Part of the README's test command (after
# `cargo test`, whose glshift binary the real-data equality test uses; it reports SKIPPED
# without ../shared/data).
#
# The extension is built by cargo in the workspace's `test` profile, the build of `cargo test
# --workspace`: the same dependency artifacts, so it costs the extension crate alone. The
# package's Python files and that library are staged as the wheel lays them out
# (scripts/stage_python_package.py: glshift/ with glshift/_core.abi3.so) and put first on
# PYTHONPATH. GLSHIFT_PY_BUILD=pip builds and installs the wheel instead, as users do (pip,
# maturin, release profile; minutes more).
#
#   PYTHON=python3.12 bash scripts/test_python.sh           # another interpreter (>= 3.10)
#   GLSHIFT_PY_VENV=/path/venv bash scripts/test_python.sh  # reuse a venv (default: a temporary one)
#   GLSHIFT_PY_BUILD=pip bash scripts/test_python.sh        # test the wheel pip builds
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "scripts/test_python.sh: $PY is missing or older than 3.10; set PYTHON to a Python >= 3.10" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
VENV=${GLSHIFT_PY_VENV:-$TMP/venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip_install() { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; }

case "${GLSHIFT_PY_BUILD:-cargo}" in
pip)
  pip_install ./crates/glshift-py pytest scikit-learn skada
  ;;
cargo)
  cargo build --workspace --lib --profile test --locked
  target=$(cargo metadata --format-version 1 --no-deps | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  stage=$TMP/site
  # The package's files and the built library as the wheel lays them out (pyproject.toml's
  # maturin settings); prints its runtime dependencies.
  deps=$("$PY" scripts/stage_python_package.py "$target/debug" "$stage")
  mapfile -t deps <<<"$deps"
  pip_install "${deps[@]}" pytest scikit-learn skada
  # Before site-packages, so a glshift pip-installed in a reused venv does not shadow it.
  export PYTHONPATH=$stage${PYTHONPATH:+:$PYTHONPATH}
  ;;
*)
  echo "scripts/test_python.sh: GLSHIFT_PY_BUILD is '$GLSHIFT_PY_BUILD'; use cargo or pip" >&2
  exit 1
  ;;
esac
"$VENV/bin/python" -m pytest -q -rs crates/glshift-py/tests
