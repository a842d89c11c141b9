"""The read error of IBM aihwkit's analog tile, beside the ReRAM model's.

Same statistics as benchmarks/reram_error_stats.cc: W (K x N) ~ N(0, 1/K),
x ~ N(0, 1); the mean and standard deviation of (y - x W) relative to the
fp32 outputs' RMS, pooled over draws. Run through tools/aihwkit_compare.sh,
which installs aihwkit from PyPI.
"""
import argparse
import math

import torch
import aihwkit
from aihwkit.nn import AnalogLinear
from aihwkit.simulator.configs import InferenceRPUConfig
from aihwkit.simulator.parameters.enums import BoundManagementType


def config(matched, noise, out_bound=None):
    c = InferenceRPUConfig()
    if out_bound is not None:
        c.forward.out_bound = out_bound
    if matched:
        # The ReRAM model's converters: 8-bit inputs, 5-bit ADC; tiles of
        # 128 rows as its crossbars (aihwkit's bipolar DAC/ADC step for b
        # bits: 1 / (2^b - 2), its docs' convention).
        c.forward.inp_res = 1 / (2**8 - 2)
        c.forward.out_res = 1 / (2**5 - 2)
        c.mapping.max_input_size = 128
        c.forward.bound_management = BoundManagementType.NONE
    c.forward.out_noise = 0.06 if noise else 0.0
    return c


def tile_output_sd(k, n, rows):
    """The sd of one 128-row tile's output in aihwkit's normalised units:
    inputs divided by each vector's largest |x| (noise management ABS_MAX),
    weights as given (weight_scaling_omega 0)."""
    g = torch.Generator().manual_seed(999)
    w = torch.randn(n, 128, generator=g) / math.sqrt(k)
    x = torch.randn(rows, 128, generator=g)
    x = x / x.abs().max(dim=1, keepdim=True).values
    return (x @ w.T).std().item()


def stats(rpu_config, k, n, rows, trials, program):
    total = total_sq = ref_sq = 0.0
    count = 0
    for trial in range(trials):
        g = torch.Generator().manual_seed(1000 + trial)
        w = torch.randn(n, k, generator=g) / math.sqrt(k)
        x = torch.randn(rows, k, generator=g)
        layer = AnalogLinear(k, n, bias=False, rpu_config=rpu_config)
        layer.set_weights(w)
        layer.eval()
        if program:
            layer.program_analog_weights()  # the PCM-like noise model's programming noise
        torch.manual_seed(7 + trial)
        with torch.no_grad():
            y = layer(x)
            ref = x @ w.T
        e = (y - ref).double()
        total += e.sum().item()
        total_sq += (e * e).sum().item()
        ref_sq += (ref.double() ** 2).sum().item()
        count += e.numel()
    rms = math.sqrt(ref_sq / count)
    mean = total / count
    sd = math.sqrt(max(0.0, total_sq / count - mean * mean))
    return mean / rms, sd / rms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--in", dest="k", type=int, default=512)
    p.add_argument("--out", type=int, default=512)
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--trials", type=int, default=5)
    a = p.parse_args()
    print(f"aihwkit {aihwkit.__version__} (torch {torch.__version__}), AnalogLinear with "
          f"InferenceRPUConfig: W {a.k} x {a.out} ~ N(0, 1/K), x ~ N(0, 1), {a.rows} rows, "
          f"{a.trials} draws")
    # A fixed ADC range fitted to these outputs: 4 sd of a tile's output,
    # the closest a fixed range comes to the ReRAM model's per-read ranging.
    fitted = 4 * tile_output_sd(a.k, a.out, a.rows)
    for name, matched, noise, program, bound in [
        ("8-bit DAC, 5-bit ADC (out_bound 12), 128-row tiles, no noise", True, False, False, None),
        (f"the same, out_bound {fitted:.3f} (4 sd of a tile's output)", True, False, False, fitted),
        ("that, with out_noise 0.06 and PCM programming noise", True, True, True, fitted),
        ("InferenceRPUConfig defaults (7-bit DAC, 9-bit ADC, out_noise 0.06)", False, True, False,
         None),
        ("defaults, with PCM programming noise (program_analog_weights)", False, True, True, None),
    ]:
        mean, sd = stats(config(matched, noise, bound), a.k, a.out, a.rows, a.trials, program)
        print(f"aihw  | {name:<66} | mean {mean:+.5f} | sd {sd:.5f}")


if __name__ == "__main__":
    main()
