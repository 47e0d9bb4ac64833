#!/usr/bin/env python3
"""Stages the Python package as its wheel lays it out, from a cargo build of the extension.

Reads crates/glshift-py/pyproject.toml: `tool.maturin.python-source` (the package's Python
files), `tool.maturin.module-name` (PACKAGE.MODULE: the extension's import path, and the Cargo
library `lib<MODULE>.so` or `.dylib` that cargo built under BUILD_DIR), then copies the Python
package to STAGE_DIR/PACKAGE and the library to STAGE_DIR/PACKAGE/MODULE.abi3.so, and prints
`project.dependencies`, one per line. Used by scripts/test_python.sh.

    python3 scripts/stage_python_package.py BUILD_DIR STAGE_DIR
"""

import re
import shutil
import sys
from pathlib import Path

CRATE = Path(__file__).resolve().parent.parent / "crates" / "glshift-py"


def pyproject():
    """The three fields used here; tomllib from Python 3.11, their one-line form before."""
    text = (CRATE / "pyproject.toml").read_text()
    try:
        import tomllib
    except ModuleNotFoundError:

        def field(key):
            m = re.search(rf"^{re.escape(key)} = (.*)$", text, re.M)
            if not m:
                sys.exit(f"{CRATE / 'pyproject.toml'}: no one-line `{key}`")
            return m.group(1)

        deps = re.findall(r'"([^"]+)"', field("dependencies"))
        return field("python-source").strip('"'), field("module-name").strip('"'), deps
    data = tomllib.loads(text)
    maturin = data["tool"]["maturin"]
    return maturin["python-source"], maturin["module-name"], data["project"]["dependencies"]


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    build, stage = Path(argv[0]), Path(argv[1])
    python_source, module_name, deps = pyproject()
    package, _, module = module_name.rpartition(".")
    built = [build / f"lib{module}{ext}" for ext in (".so", ".dylib")]
    lib = next((p for p in built if p.is_file()), None)
    if lib is None:
        sys.exit(f"no {built[0].name} or {built[1].name} under {build}: build the extension first")
    shutil.copytree(CRATE / python_source / package, stage / package)
    shutil.copy(lib, stage / package / f"{module}.abi3.so")
    print("\n".join(deps))


if __name__ == "__main__":
    main(sys.argv[1:])
