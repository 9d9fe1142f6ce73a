#!/usr/bin/env bash
# The GPU acceptance run, one command on a CUDA machine (docs/scale.md):
#
#   bash bench/gpu/run.sh [--out DIR]     # on the GPU node: install what is missing, run a-d
#   bash bench/gpu/run.sh --cpu           # the same stages on CPU, small (CI runs this)
#
# Beforehand, where PyPI is reachable: `python bench/gpu/prepare.py` fills
# bench/gpu/travel/ (wheels, the acceptance corpus) for a node without network. On the
# node, what its Python lacks is installed from there (or from the index, if reachable)
# into a folder put on PYTHONPATH; bench/gpu/acceptance.py then runs the stages and writes
# at most 8 files into DIR (default bench/gpu/out). The CPU mode uses the package as
# installed here, checks the wheel list and the size of what travels, and runs stages
# a-d with device cpu on tiny models.
set -euo pipefail
cd "$(dirname "$0")/../.."

device=cuda
out=bench/gpu/out
stages=abcd
usage="usage: bash bench/gpu/run.sh [--cpu] [--out DIR] [--stages abcd]"
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) device=cpu ;;
    --out|--stages)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "error: $1 needs a value; $usage" >&2; exit 2; fi
      if [ "$1" = --out ]; then out="$2"; else stages="$2"; fi
      shift ;;
    *) echo "error: unknown option $1; $usage" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ "$stages" =~ ^[abcd]+$ ]]; then
  echo "error: --stages $stages: stages are letters of abcd (a CUDA tests, b extraction benchmark, c workflow, d 7B model)" >&2
  exit 2
fi
if [ -e "$out" ] && [ ! -d "$out" ]; then
  echo "error: --out $out is a file, not a directory" >&2
  exit 2
fi
python=${PYTHON:-python3}
started=$SECONDS
mkdir -p "$out"

if [ "$device" = cpu ]; then
  "$python" bench/gpu/prepare.py 2>&1 | tee "$out/setup.log"
else
  site=${TMPDIR:-/tmp}/contextuality-acceptance-site
  "$python" bench/gpu/prepare.py --install "$site" 2>&1 | tee "$out/setup.log"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
"$python" bench/gpu/acceptance.py --device "$device" --out "$out" --stages "$stages" \
  --setup-seconds $((SECONDS - started))
