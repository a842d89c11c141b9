#!/usr/bin/env python3
"""Kernel latencies measured by others, as `kernel_holdout --measured` reads them.

NeuSight (Lee et al., "NeuSight: Forecasting GPU Performance for Deep
Learning Training and Inference", ASPLOS 2025) publishes per-kernel
latencies of PyTorch 2.1 ops in fp32 on Pascal, Volta, Turing, Ampere and
Hopper boards: CSVs with the columns OPName, Latency (ms, CUDA events
around one eager call on an idle GPU, the mean of the fastest runs: what
`kernel_holdout --measured_as=event` prices), Device, and the
dims (B, H for a row op or an element-wise one; B, M, N, K for
torch.bmm((B, M, N), (B, N, K))). This reads those CSVs for one device and
writes the cases this project's kernel model can price:

    ln B x H        layer norm over rows of H      -> "ln BxH"
    softmax B x H   softmax over rows of H         -> "sm BxH"
    bmm B,M,N,K     B products M x N by N x K      -> "bmm BxMxNxK" (batch, m, k, n)
    linear B,M,N,K  nn.Linear(N, K) on (B, M, N)   -> "linear (B*M)xNxK" (rows, in, out)
    add, mul, div, pow B x H (two tensors)          -> "add N" ... (N = B*H elements)
    addu, mulu, divu, powu B x H (tensor, number)  -> "add-s N", "mul-s N", ...
    relu, tanh, gelu B x H                         -> "relu N", "tanh N", "gelu N"

Other ops are counted and left out. A case measured more than once keeps
the median. Nothing of theirs is stored here: point --csv at a checkout.

    tools/published_kernels.py --device="Tesla V100-PCIE-32GB" \\
        --csv=NeuSight/scripts/asplos/data/dataset/test/{ln,softmax,bmm,elem}.csv \\
        --out=/tmp/v100.csv
    bazel run //benchmarks:kernel_holdout -- --measured=/tmp/v100.csv \\
        --measured_as=event --gpu=v100

It ends naming the presets that describe the board (PRESETS).

Exit status: 0 written; 2 bad arguments or input (the message names the
file and line).
"""
import argparse
import csv
import statistics
import sys

# OPName -> (our op, how its dims are named, the class kernel_holdout prints)
OPS = {
    "linear": ("linear", "linear", "gemm"),
    "ln": ("ln", "rows", "layer-norm"),
    "softmax": ("sm", "rows", "softmax"),
    "bmm": ("bmm", "bmm", "batched"),
    "add": ("add", "elements", "elementwise"),
    "mul": ("mul", "elements", "elementwise"),
    "div": ("div", "elements", "elementwise"),
    "pow": ("pow", "elements", "elementwise"),
    "addu": ("add-s", "elements", "elementwise"),
    "mulu": ("mul-s", "elements", "elementwise"),
    "divu": ("div-s", "elements", "elementwise"),
    "powu": ("pow-s", "elements", "elementwise"),
    "relu": ("relu", "elements", "elementwise"),
    "tanh": ("tanh", "elements", "elementwise"),
    "gelu": ("gelu", "elements", "elementwise"),
}


# NeuSight's Device names of the boards a preset describes -> the presets to
# price them with: the board's own datasheet first, then its chip's SXM board.
PRESETS = {
    "Tesla V100-PCIE-32GB": "v100-pcie,v100",
    "NVIDIA A100-PCIE-40GB": "a100-pcie,a100",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb,a100",
    "NVIDIA H100 80GB HBM3": "h100",
    "Tesla T4": "t4",
}


def whole(row, key, where):
    try:
        v = int(float(row[key]))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{where}: column {key} is missing or not a number") from None
    if v < 1:
        raise ValueError(f"{where}: column {key} is {v}; dims are at least 1")
    return v


def case_of(row, where):
    """(class, case name) of a row, or None for an op left out."""
    op = OPS.get(row.get("OPName", ""))
    if op is None:
        return None
    name, dims, cls = op
    if dims == "rows":
        return cls, f"{name} {whole(row, 'B', where)}x{whole(row, 'H', where)}"
    if dims == "elements":
        return cls, f"{name} {whole(row, 'B', where) * whole(row, 'H', where)}"
    b, m, n, k = (whole(row, key, where) for key in ("B", "M", "N", "K"))
    if dims == "linear":
        return cls, f"{name} {b * m}x{n}x{k}"
    return cls, f"{name} {b}x{m}x{n}x{k}"


def read(paths, device):
    """{case: (class, [seconds])} for `device`, and the counts left out by op."""
    cases, left_out = {}, {}
    for path in paths:
        try:
            f = open(path, newline="")
        except OSError as e:
            raise ValueError(f"cannot read --csv {path}: {e.strerror}") from None
        with f:
            reader = csv.DictReader(f)
            names = set(reader.fieldnames or [])
            if not {"OPName", "Latency", "Device"} <= names:
                raise ValueError(f"{path} line 1: want a header with OPName, Latency and "
                                 "Device (a NeuSight dataset CSV)")
            for n, row in enumerate(reader, start=2):
                if row["Device"] != device:
                    continue
                where = f"{path} line {n}"
                found = case_of(row, where)
                if found is None:
                    left_out[row["OPName"]] = left_out.get(row["OPName"], 0) + 1
                    continue
                try:
                    ms = float(row["Latency"])
                except ValueError:
                    raise ValueError(
                        f"{where}: Latency '{row['Latency']}' is not a number") from None
                if not ms > 0:
                    raise ValueError(f"{where}: Latency {ms} ms; want a time above 0")
                cls, name = found
                cases.setdefault(name, (cls, []))[1].append(ms * 1e-3)
    return cases, left_out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", required=True,
                   help="the Device column's value, e.g. 'Tesla V100-PCIE-32GB'")
    p.add_argument("--csv", nargs="+", required=True, help="NeuSight dataset CSVs")
    p.add_argument("--out", required=True, help="the CSV kernel_holdout --measured reads")
    a = p.parse_args(argv)
    try:
        cases, left_out = read(a.csv, a.device)
    except ValueError as e:
        print(f"published_kernels: {e}", file=sys.stderr)
        return 2
    if not cases:
        print(f"published_kernels: no row of a priced op for device '{a.device}' in "
              f"{', '.join(a.csv)}; the Device column names the board exactly", file=sys.stderr)
        return 2
    with open(a.out, "w") as out:
        out.write(f"# NeuSight kernel latencies on {a.device} (PyTorch 2.1, fp32, CUDA events "
                  "around one eager call), by tools/published_kernels.py\n")
        out.write("class,case,reps,measured_s,ops\n")
        for name, (cls, seconds) in cases.items():
            out.write(f"{cls},{name},1,{statistics.median(seconds):.6e},published\n")
    by_class = {}
    for cls, _ in cases.values():
        by_class[cls] = by_class.get(cls, 0) + 1
    counts = ", ".join(f"{c} {n}" for c, n in sorted(by_class.items()))
    skipped = ", ".join(f"{o} {n}" for o, n in sorted(left_out.items()))
    print(f"{a.out}: {len(cases)} cases ({counts})" + (f"; left out: {skipped}" if skipped else ""))
    presets = PRESETS.get(a.device)
    print(f"price it: kernel_holdout --measured={a.out} --measured_as=event --gpu="
          + (presets if presets else "PRESET (no preset describes this board; "
             "closest by datasheet, or a profile file)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
