#!/bin/sh
# Builds the artifact test fixtures with the installed nvcc (one recipe list for CMake and for
# scripts/test-artifact-hardening). Usage: make_fixtures.sh OUTDIR [NVCC]
# *.ptxas.log files hold `nvcc -Xptxas -v` output: the independent oracle for registers, shared
# memory and stack bytes that the tests compare the parsed cubins against.
set -eu
out=$1
nvcc=${2:-nvcc}
src=$(cd "$(dirname "$0")/fixtures" && pwd)
mkdir -p "$out"
cd "$out"
k="$src/kernels.cu"
v="-Xptxas -v"

"$nvcc" -cubin -arch=sm_90 $v "$k" -o k_sm90.cubin 2> k_sm90.ptxas.log
"$nvcc" -cubin -arch=sm_90 -maxrregcount=24 $v "$k" -o k_sm90_r24.cubin 2> k_sm90_r24.ptxas.log
"$nvcc" -cubin -arch=sm_90a "$k" -o k_sm90a.cubin
"$nvcc" -ptx -arch=compute_90 "$k" -o k_compute90.ptx
# SASS only, uncompressed
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 --compress-mode=none "$k" -o sass_sm90.fatbin
# the same with fewer registers: other machine code for some kernels of the same names (inspect --diff tests)
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 --compress-mode=none -maxrregcount=24 "$k" -o sass_sm90_r24.fatbin
# PTX only: default mode (zstd-compressed PTX) and uncompressed
"$nvcc" -fatbin -gencode arch=compute_90,code=compute_90 "$k" -o ptx_compute90.fatbin
"$nvcc" -fatbin -gencode arch=compute_90,code=compute_90 --compress-mode=none "$k" -o ptx_compute90_nc.fatbin
# sm_80 SASS + compute_80 PTX: on sm_90 the driver must JIT
"$nvcc" -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 $v "$k" \
  -o sm80_ptx80.fatbin 2> sm80_ptx80.ptxas.log
"$nvcc" -fatbin -gencode arch=compute_80,code=sm_80 "$k" -o sm80_only.fatbin
# several archs
"$nvcc" -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90a,code=sm_90a \
  -gencode arch=compute_90,code=compute_90 $v "$k" -o multi.fatbin 2> multi.ptxas.log
# every image compressed: zstd (default mode) and LZ4 (--compress-mode=speed)
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -Xfatbin -compress-all "$k" -o zstd.fatbin
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -Xfatbin -compress-all --compress-mode=speed "$k" -o lz4.fatbin
# PTX with stored JIT options
"$nvcc" -fatbin -gencode arch=compute_90,code=compute_90 -Xptxas -O2 --compress-mode=none "$k" -o ptx_opts.fatbin
# family- and arch-specific targets (Blackwell)
"$nvcc" -fatbin -gencode arch=compute_100f,code=sm_100f -gencode arch=compute_100f,code=compute_100f \
  -gencode arch=compute_120a,code=sm_120a "$k" -o family.fatbin
# host executable and shared library with embedded fatbins
"$nvcc" -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 "$src/host.cu" -o host_exe
"$nvcc" -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 "$k" -o libkernels.so
"$nvcc" --version > nvcc.version
touch fixtures.stamp
