#!/usr/bin/env python3
"""SASS of a kernel module without a GPU: compiles crates/tessera-gpu/kernels/<module>.cu (a path
under kernels/, e.g. int/query.cu) for sm_90 with NVRTC 13.0 (the version CI installs) and
disassembles the CUBIN with nvdisasm.

Used to count the instructions of a hot loop before spending GPU time on it (the fused FOR SUM
and RFOR work of 2026-11-22 were judged this way first). A workflow tool: nothing at build,
test or run time calls it.

Setup (once per machine):
    export LD_LIBRARY_PATH=$(scripts/nvrtc-for-ci.sh)
    python3 -m pip install --target /tmp/nvdisasm nvidia-cuda-nvdisasm   # any 13.x reads sm_90
Usage:
    scripts/sass.py MODULE.cu [NVRTC options...] > out.sass
    e.g. scripts/sass.py int/query.cu --ptxas-options=-v   (registers and spills go to stderr)
Kernel headers are inlined the way kernels.rs does it (quoted includes relative to the including
file, each include once).
"""
import ctypes
import glob
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
kernels = os.path.join(here, '..', 'crates', 'tessera-gpu', 'kernels')
module = sys.argv[1]
opts = [a.encode() for a in sys.argv[2:]]
seen = set()


def inline(path):
    out = []
    for line in open(path):
        m = re.match(r'\s*#include\s+"([^"]+)"', line)
        if m:
            name = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if name not in seen:
                seen.add(name)
                out.append(inline(name))
        else:
            out.append(line)
    return ''.join(out)


src = inline(os.path.normpath(os.path.join(kernels, module))).encode()
lib = ctypes.CDLL('libnvrtc.so.13')
prog = ctypes.c_void_p()
if lib.nvrtcCreateProgram(ctypes.byref(prog), src, os.path.basename(module).encode(), 0, None, None) != 0:
    sys.exit('nvrtcCreateProgram failed')
args = [b'--gpu-architecture=sm_90', b'--std=c++17', b'-lineinfo'] + opts
rc = lib.nvrtcCompileProgram(prog, len(args), (ctypes.c_char_p * len(args))(*args))
n = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
lib.nvrtcGetProgramLog(prog, log)
print(log.value.decode(), file=sys.stderr)
if rc != 0:
    sys.exit(1)
lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
cubin = ctypes.create_string_buffer(n.value)
lib.nvrtcGetCUBIN(prog, cubin)
path = '/tmp/tessera-sass.cubin'
open(path, 'wb').write(cubin.raw)
tool = os.environ.get('NVDISASM') or next(iter(glob.glob('/tmp/nvdisasm/nvidia/cu*/bin/nvdisasm')), 'nvdisasm')
out = subprocess.run([tool, '-c', path], capture_output=True, text=True)
sys.stdout.write(out.stdout)
sys.stderr.write(out.stderr)
sys.exit(out.returncode)
