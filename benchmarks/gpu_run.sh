#!/usr/bin/env bash
# Issue 21, item 5: the GPU figures, on a lent GPU machine (the device tool's `run`).
#
#   bash benchmarks/gpu_run.sh SECONDS STEP...
#
# runs the STEPs in order, each under `timeout`, and stops starting steps once SECONDS
# (counted from the start, the wheels' install included) have passed; every step's output
# goes to a file in $OUT. Steps: env, device_check, replay_cuda, humanoid_cuda,
# replay_cpu, humanoid_cuda_maxiter2, pytest. The machine has no network: Ax 1.3.1 and
# the packages it lacks there travel as wheels in .whl/ (ignored by git; name `.whl` in
# `carry`). The repository's root goes on PYTHONPATH (the package is not installed).
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
budget=${1:?usage: gpu_run.sh SECONDS STEP...}
shift
start=$(date +%s)
if [[ -z ${SKIP_INSTALL:-} ]]; then  # SKIP_INSTALL=1: where the packages are installed
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >"$OUT/env.txt" 2>&1 || { cat "$OUT/env.txt"; exit 1; }
fi
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 MPLBACKEND=Agg
FIXTURES=(benchmarks/results/replay/*.json)

# seconds left for a step: at most $1, at most what the budget leaves
left() {
    local rest=$((budget - ($(date +%s) - start)))
    ((rest < $1)) && echo "$rest" || echo "$1"
}

step() {  # step NAME CAP COMMAND...
    local name=$1 cap
    cap=$(left "$2")
    shift 2
    if ((cap < 20)); then
        echo "== $name: skipped, $cap s of the budget left" | tee -a "$OUT/env.txt"
        return
    fi
    echo "== $name (timeout ${cap}s): $*" | tee -a "$OUT/env.txt"
    local t0=$(date +%s)
    timeout -k 10 "$cap" "$@" 2>&1 | tee "$OUT/$name.txt"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc after $(($(date +%s) - t0)) s" | tee -a "$OUT/env.txt"
}

for s in "$@"; do
    case $s in
    env)
        {
            nvidia-smi -L
            nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
            python3 -V
            python3 -c 'import torch, botorch, gpytorch, ax; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else ""); print("botorch", botorch.__version__, "gpytorch", gpytorch.__version__, "ax", ax.__version__)'
            echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
            echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
        } >>"$OUT/env.txt" 2>&1
        cat "$OUT/env.txt"
        ;;
    device_check) step device_check 150 python3 benchmarks/device_check.py --dim 100 --rounds 2 ;;
    replay_cuda | replay_cpu)
        step "$s" 420 python3 benchmarks/replay_rounds.py time "${FIXTURES[@]}" \
            --study benchmarks/results/study --rounds 1 --repeats 3 --device "${s#replay_}" \
            --json "$OUT/$s.json"
        ;;
    humanoid_cuda) step humanoid_cuda 420 python3 benchmarks/humanoid_scale.py --device cuda ;;
    humanoid_cuda_maxiter2)
        step "$s" 420 python3 benchmarks/humanoid_scale.py --device cuda --fit-maxiter 2
        ;;
    pytest)
        step pytest 420 python3 -m pytest tests -q -p no:cacheprovider -n 12 --timeout 300 -rfE
        ;;
    *) echo "unknown step $s" | tee -a "$OUT/env.txt" ;;
    esac
done
echo "== total $(($(date +%s) - start)) s" | tee -a "$OUT/env.txt"
