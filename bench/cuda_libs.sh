# Locates CUDA 13's cuBLAS and NVRTC for glshift's GPU path the way glshift prefers them
# (docs/gpu.md): the versioned files, libcublas.so.13 and libnvrtc.so.13, from the CUDA toolkit's
# folders or a Python environment's NVIDIA wheels. Sourced by bench/gpu_check.sh and
# bench/gpu_prepare.sh: `locate_cuda_libs` puts the folders found first on LD_LIBRARY_PATH (cudarc
# opens cuBLAS by name), sets GLSHIFT_NVRTC to the NVRTC found (glshift opens that file and the
# builtins beside it), and prints every folder it searched and what it found. A library already
# named keeps its place: GLSHIFT_NVRTC set beforehand is kept. glshift itself checks, when it
# opens the GPU, that the cuBLAS cudarc will open is CUDA 13's, and names it where not.

# The folders searched, in order: $CUDA_HOME's, the toolkits under /usr/local, each python3
# site-packages' nvidia/*/lib, then the system's library folders.
cuda_lib_roots() {
  local d
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13* /usr/local/cuda-1[4-9]*; do
    [ -n "$d" ] && [ -d "$d" ] && echo "$d"
  done
  if command -v python3 >/dev/null 2>&1; then
    python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
paths = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
seen = set()
for p in paths:
    for d in sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib"))):
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            print(d)
EOF
  fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /opt; do
    [ -d "$d" ] && echo "$d"
  done
}

# The first file named $1 under the roots, or nothing.
find_cuda_lib() {
  local root found
  while read -r root; do
    found=$(find "$root" -maxdepth 6 -name "$1" \( -type f -o -type l \) -print -quit 2>/dev/null)
    if [ -n "$found" ]; then
      echo "$found"
      return
    fi
  done < <(cuda_lib_roots)
}

locate_cuda_libs() {
  echo "CUDA libraries: searching $(cuda_lib_roots | tr '\n' ' ')"
  local lib found
  for lib in libcublas.so.13 libnvrtc.so.13; do
    if [ "$lib" = libnvrtc.so.13 ] && [ -n "${GLSHIFT_NVRTC:-}" ]; then
      echo "  $lib: GLSHIFT_NVRTC=$GLSHIFT_NVRTC (set beforehand)"
      continue
    fi
    found=$(find_cuda_lib "$lib")
    if [ -z "$found" ]; then
      echo "  $lib: not found (glshift will say what it tried)"
      continue
    fi
    echo "  $lib: $found"
    export LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ "$lib" = libnvrtc.so.13 ] && export GLSHIFT_NVRTC="$found"
  done
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "GLSHIFT_NVRTC=${GLSHIFT_NVRTC:-}"
}
