#!/usr/bin/env bash
# Issue 35's GPU checks in one run, from the repository's root on a machine with CUDA (torch with CUDA, Triton and
# JAX installed, the project installed: pip install --no-deps --no-build-isolation -e .):
#
#     bash benchmarks/gpu.sh [OUT_DIR]
#
# First the tests that run on CUDA and skip elsewhere (the Triton loop, training on the device, the compiled
# modules under Inductor and autocast, half precision) with the device-read counts, then every GPU row of
# benchmarks/engines.py against hand-written torch, after measuring the device's rates (--calibrate).  Each part's
# output is also written to OUT_DIR (default: the current folder).  About 5 minutes on an H200.
set -o pipefail
out=${1:-.}
export PYTHONUNBUFFERED=1
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.__version__, torch.cuda.get_device_name())" || exit 1
python -m pytest -q -p no:cacheprovider -rs tests/kernels/test_triton_loop.py tests/kernels/test_device_reads.py \
    tests/experiments/test_training_engines.py tests/interactions/test_torch_call.py \
    tests/kernels/test_half_precision.py tests/kernels/test_attend.py 2>&1 | tee "$out/gpu-tests.log"
tests=$?
python benchmarks/engines.py --device cuda --calibrate --repeats 5 2>&1 | tee "$out/gpu-rows.log" || exit
exit $tests
