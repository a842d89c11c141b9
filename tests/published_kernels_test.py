#!/usr/bin/python3
"""tools/published_kernels.py turns a published kernel set (NeuSight's CSV
layout) into the cases kernel_holdout prices, and kernel_holdout prices
them as kernels' own device time.

The rows here are made up in NeuSight's layout; no published figure is
stored in this repository. Arguments: the script, then kernel_holdout.
"""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = sys.argv.pop(1)
HOLDOUT = sys.argv.pop(1)

HEADER = "OPName,Latency,Device,Torch Version,Kernel Name,B,H,M,N,K\n"
V100 = "Tesla V100-PCIE-32GB"


def row(op, ms, device=V100, b="", h="", m="", n="", k=""):
    return f'{op},{ms},{device},p2.1.0,"void k(int, float)",{b},{h},{m},{n},{k}\n'


class PublishedKernelsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write(self, name, rows):
        with open(self.path(name), "w") as f:
            f.write(HEADER + "".join(rows))
        return self.path(name)

    def convert(self, *csvs, device=V100):
        return subprocess.run([sys.executable, SCRIPT, f"--device={device}", "--csv", *csvs,
                               f"--out={self.path('out.csv')}"], capture_output=True, text=True)

    def test_each_priced_op_becomes_a_case_and_repeats_keep_their_median(self):
        src = self.write("set.csv", [
            row("ln", 0.5, b=65536, h=1024),
            row("softmax", 0.25, b=8192, h=2048),
            row("softmax", 0.75, b=8192, h=2048),
            row("softmax", 0.35, b=8192, h=2048),
            row("bmm", 0.125, b=48000, m=12, n=16, k=24),
            row("linear", 0.3, b=8, m=1024, n=768, k=3072),
            row("add", 0.1, b=4096, h=1000),
            row("gelu", 0.2, b=10, h=10),
            row("powu", 0.3, b=10, h=20),
            row("tanh", 0.4, b=20, h=10),
            row("dropout", 0.1, b=10, h=10),
            row("ln", 9.0, device="NVIDIA A100-PCIE-40GB", b=8, h=8),
        ])
        r = self.convert(src)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("8 cases", r.stdout)
        self.assertIn("left out: dropout 1", r.stdout)
        self.assertIn("--measured_as=event --gpu=v100-pcie,v100", r.stdout)
        with open(self.path("out.csv")) as f:
            lines = [l.strip() for l in f if not l.startswith("#")]
        self.assertEqual(lines[0], "class,case,reps,measured_s,ops")
        got = {l.split(",")[1]: (l.split(",")[0], float(l.split(",")[3])) for l in lines[1:]}
        self.assertEqual(got, {
            "ln 65536x1024": ("layer-norm", 0.5e-3),
            "sm 8192x2048": ("softmax", 0.35e-3),  # the median of three
            # torch.bmm((B, M, N), (B, N, K)): inner N, out K -> batch, m, k, n
            "bmm 48000x12x16x24": ("batched", 0.125e-3),
            # nn.Linear(N, K) on (B, M, N): rows B*M, in N, out K
            "linear 8192x768x3072": ("gemm", 0.3e-3),
            "add 4096000": ("elementwise", 0.1e-3),
            "gelu 100": ("elementwise", 0.2e-3),
            "pow-s 200": ("elementwise", 0.3e-3),  # torch.pow(x, a number)
            "tanh 200": ("elementwise", 0.4e-3),
        })

        priced = subprocess.run([HOLDOUT, f"--measured={self.path('out.csv')}",
                                 "--measured_as=kernel", "--gpu=v100,h100"],
                                capture_output=True, text=True)
        self.assertEqual(priced.returncode, 0, priced.stderr)
        for case in ("ln 65536x1024", "sm 8192x2048", "bmm 48000x12x16x24", "add 4096000",
                     "linear 8192x768x3072", "pow-s 200", "tanh 200"):
            self.assertIn(case, priced.stdout)
        for cls in ("gemm", "batched", "elementwise", "layer-norm", "softmax"):
            self.assertRegex(priced.stdout, rf"\n{cls} +\d+ %")

    def test_a_board_no_preset_describes_is_said_to_be_one(self):
        p4 = self.write("p4.csv", [row("ln", 0.5, device="Tesla P4", b=64, h=64)])
        r = self.convert(p4, device="Tesla P4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--gpu=PRESET (no preset describes this board", r.stdout)

    def test_bad_input_names_the_file_and_line_and_exits_2(self):
        bad = self.write("bad.csv", [row("ln", 0.5, b=8, h=8), row("ln", "fast", b=8, h=8)])
        r = self.convert(bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.csv line 3: Latency 'fast' is not a number", r.stderr)

        zero = self.write("zero.csv", [row("bmm", 0.5, b=0, m=1, n=1, k=1)])
        r = self.convert(zero)
        self.assertEqual(r.returncode, 2)
        self.assertIn("zero.csv line 2: column B is 0", r.stderr)

        other = self.write("other.csv", [row("ln", 0.5, b=8, h=8)])
        r = self.convert(other, device="Tesla T4")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no row of a priced op for device 'Tesla T4'", r.stderr)

        with open(self.path("plain.csv"), "w") as f:
            f.write("a,b\n1,2\n")
        r = self.convert(self.path("plain.csv"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("plain.csv line 1: want a header with OPName, Latency and Device", r.stderr)

    def test_kernel_holdout_refuses_a_case_it_cannot_parse(self):
        with open(self.path("cases.csv"), "w") as f:
            f.write("class,case,reps,measured_s,ops\nlayer-norm,ln 8x8x8,1,1e-5,published\n")
        r = subprocess.run([HOLDOUT, f"--measured={self.path('cases.csv')}", "--measured_as=kernel",
                            "--gpu=v100"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cases.csv line 2: case 'ln 8x8x8': ln takes 2 dims, got 3", r.stderr)
        r = subprocess.run([HOLDOUT, f"--measured={self.path('cases.csv')}", "--measured_as=wall",
                            "--gpu=v100"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--measured_as 'wall': want graph, kernel or event", r.stderr)


if __name__ == "__main__":
    unittest.main()
