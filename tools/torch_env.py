#!/usr/bin/env python3
"""Where a machine's own PyTorch is, for building against it (HPT_TORCH).

A GPU box usually has its torch already (say 2.11.0+cu130) and cannot
always download the 2.8 GB the pinned one weighs. `./hpt setup` with
HPT_TORCH=python3 (or a path to a Python) asks this script where that
torch's headers and libraries are, and which NCCL headers to compile
against: those of the version that torch was built with. NCCL 2.29.7
headers against a libtorch built with 2.28.9 change
ProcessGroupNCCL::Options' layout and crash its destructor (measured on an
H100, 2026-11), so a mismatch is refused, or fixed by fetching the right
headers.

  torch_env.py locate PYTHON      prints KEY=VALUE lines: TORCH_SITE,
                                  TORCH_VERSION, NCCL_REQUIRED, NCCL_HEADERS
                                  (the folder holding nccl.h; empty when the
                                  one beside torch is another version),
                                  CUDA_MAJOR
  torch_env.py fetch-nccl VERSION CUDA_MAJOR DIR
                                  downloads nvidia-nccl-cuMAJOR==VERSION
                                  (no dependencies) and unpacks its headers
                                  into DIR/include; prints the folder

Exit codes: 0 done; 2 no torch there or bad arguments; 3 the headers
cannot be had (the message says which version and how to get it).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

FIND_TORCH = (
    "import importlib.util, os\n"
    "spec = importlib.util.find_spec('torch')\n"
    "print(os.path.dirname(spec.submodule_search_locations[0]) if spec else '')\n")


def torch_site(python):
    """The site-packages folder holding `python`'s torch, or ''."""
    out = subprocess.run([python, "-c", FIND_TORCH], capture_output=True, text=True,
                         timeout=120)
    return out.stdout.strip() if out.returncode == 0 else ""


def dist_info(site):
    """torch's .dist-info folder in `site`, or ''."""
    found = sorted(glob.glob(os.path.join(site, "torch-*.dist-info")))
    return found[-1] if found else ""


def metadata(site):
    info = dist_info(site)
    if not info:
        return ""
    with open(os.path.join(info, "METADATA"), errors="replace") as f:
        return f.read()


def torch_version(site):
    m = re.search(r"^Version: (\S+)", metadata(site), re.M)
    return m.group(1) if m else ""


def required_nccl(site):
    """(version, CUDA major) of the nvidia-nccl wheel torch requires, e.g.
    ("2.28.9", "13"); ("", "") for a torch that names none (a CPU build)."""
    m = re.search(r"^Requires-Dist: nvidia-nccl-cu(\d+)==([\d.]+)", metadata(site), re.M)
    return (m.group(2), m.group(1)) if m else ("", "")


def header_version(nccl_h):
    """"MAJOR.MINOR.PATCH" that an nccl.h declares, or ''."""
    if not os.path.exists(nccl_h):
        return ""
    with open(nccl_h, errors="replace") as f:
        text = f.read()
    parts = []
    for name in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"):
        m = re.search(r"#define %s (\d+)" % name, text)
        if not m:
            return ""
        parts.append(m.group(1))
    return ".".join(parts)


def matching_headers(site, required):
    """The folder of the nccl.h beside torch when it is `required`'s
    version (or torch requires none), else ''."""
    include = os.path.join(site, "nvidia", "nccl", "include")
    found = header_version(os.path.join(include, "nccl.h"))
    if found and (not required or found == required):
        return include
    return ""


def locate(python):
    site = torch_site(python)
    if not site or not os.path.exists(os.path.join(site, "torch", "lib", "libtorch_cpu.so")):
        print("torch_env: %s has no LibTorch (import torch finds none with lib/libtorch_cpu.so)"
              % python, file=sys.stderr)
        return 2
    required, cuda = required_nccl(site)
    print("TORCH_SITE=%s" % site)
    print("TORCH_VERSION=%s" % torch_version(site))
    print("NCCL_REQUIRED=%s" % required)
    print("NCCL_HEADERS=%s" % matching_headers(site, required))
    print("CUDA_MAJOR=%s" % cuda)
    return 0


def fetch_nccl(version, cuda, folder):
    include = os.path.join(folder, "include")
    if header_version(os.path.join(include, "nccl.h")) == version:
        print(include)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
             "nvidia-nccl-cu%s==%s" % (cuda, version)],
            capture_output=True, text=True)
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if pip.returncode != 0 or not wheels:
            print("torch_env: this torch was built with NCCL %s; its headers are not beside it "
                  "and could not be downloaded (pip: %s). Install nvidia-nccl-cu%s==%s beside "
                  "torch, or put its include/ folder in HPT_NCCL_INCLUDE"
                  % (version, pip.stderr.strip().splitlines()[-1:] or "no wheel", cuda, version),
                  file=sys.stderr)
            return 3
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if "/nccl/include/" in name and not name.endswith("/"):
                    target = os.path.join(include, name.split("/nccl/include/", 1)[1])
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as out:
                        out.write(wheel.read(name))
    if header_version(os.path.join(include, "nccl.h")) != version:
        print("torch_env: the nvidia-nccl-cu%s==%s wheel held no nccl.h of that version"
              % (cuda, version), file=sys.stderr)
        return 3
    print(include)
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "locate":
        return locate(argv[1])
    if len(argv) == 4 and argv[0] == "fetch-nccl":
        return fetch_nccl(argv[1], argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
