#!/usr/bin/python3
"""Record once, cost many, on real processes: a tiny HpT job trained by a
coordinator and gpu, reram and systolic workers over loopback gRPC, then

- `hptctl whatif` under the job's own settings reproduces its report (every
  cost figure to 1e-9 relative);
- for cost-only settings (GPU preset, systolic array size and DRAM
  bandwidth, ReRAM clock, ReRAM chip tiles, interconnect), a whatif of the
  job equals the same job trained again with the workers (or the job)
  started under that setting, same seed, to 1e-6 relative;
- a setting that changes numerics is costed and flagged;
- unknown keys and bad values are refused naming them;
- `hptctl trace --format=chrome` is valid Chrome trace-event JSON (schema and
  nesting), `hptctl sweep` writes its table, CSV, JSON and SVG, and
  `--target` answers.

Runs with: <hpt_coordinator> <hpt_worker> <hptctl>
"""
import csv
import json
import math
import os
import sys
import unittest

import hpt_cluster

COORDINATOR, WORKER, HPTCTL = [os.path.abspath(a) for a in sys.argv[1:4]]
del sys.argv[1:4]
JOB = hpt_cluster.TINY_JOB


def numbers(value, path=""):
    """Every number in a JSON value, by path."""
    out = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(numbers(v, f"{path}.{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(numbers(v, f"{path}[{i}]"))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[path] = float(value)
    elif isinstance(value, str):
        try:  # int64 fields come as strings in proto3 JSON
            out[path] = float(int(value))
        except ValueError:
            pass
    return out


def cost_sections(job):
    hpt = job.get("hpt", {})
    sections = {"cost": job.get("cost", {}), "device_costs": job.get("device_costs", []),
                "phases": hpt.get("phases", []), "comparison": hpt.get("comparison", {})}
    for d in sections["device_costs"]:
        d.pop("worker", None)  # a re-run's ports differ
        d.get("cost", {}).pop("measured_s", None)
    for p in sections["phases"]:
        p.pop("wall_s", None)
    # Measured baselines are timings: a re-run's differ.
    comparison = sections["comparison"]
    comparison["baselines"] = [b for b in comparison.get("baselines", [])
                               if not b.get("measured")]
    sections["cost"].pop("measured_s", None)
    return sections


def relative(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


class WhatIfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL)
        cls.job_id = cls.cluster.train(JOB, name="whatif")
        cls.report = cls.cluster.job(cls.job_id)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def whatif(self, *sets):
        args = ["whatif", self.job_id, "--format=json"]
        for s in sets:
            args += ["--set", s]
        return json.loads(self.cluster.ctl(*args).stdout)

    def assert_close(self, got, want, tolerance, what):
        g, w = numbers(cost_sections(got)), numbers(cost_sections(want))
        self.assertEqual(sorted(g), sorted(w), what)
        worst = max(w, key=lambda k: relative(g[k], w[k]))
        self.assertLessEqual(relative(g[worst], w[worst]), tolerance,
                             f"{what}: {worst} is {g[worst]}, want {w[worst]}")

    def test_own_settings_reproduce_the_report(self):
        self.assertEqual(self.report["hpt"]["comparison"]["baseline"], "paper")
        self.assertGreater(int(self.report["hpt"]["switch_step"]), 0)
        same = self.whatif("gpu_baseline=paper")
        self.assertEqual(same.get("numerics_notes", []), [])
        self.assert_close(same["job"], self.report, 1e-9, "whatif under its own settings")

    def test_whatif_equals_a_rerun_under_each_cost_only_setting(self):
        cases = [  # (whatif setting, worker flags, job flags)
            ("reference_gpu=h100", ["--reference_gpu=h100"], []),
            ("systolic_rows=32", ["--systolic_rows=32"], []),
            ("systolic_dram_bw_words_per_cycle=2", ["--systolic_dram_bw_words_per_cycle=2"], []),
            ("reram_clock_hz=2.5e8", ["--reram_clock_hz=2.5e8"], []),
            ("reram_chip_tiles=64", [], ["--reram_chip_tiles=64"]),
        ]
        for setting, worker_flags, job_flags in cases:
            with self.subTest(setting=setting):
                predicted = self.whatif(setting)
                self.assertEqual(predicted.get("numerics_notes", []), [])
                rerun = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL, worker_flags)
                try:
                    job = rerun.job(rerun.train(JOB, *job_flags, name="whatif"))
                finally:
                    rerun.stop()
                self.assertEqual(job["epoch_losses"], self.report["epoch_losses"],
                                 "a cost-only setting trained differently")
                self.assert_close(predicted["job"], job, 1e-6, setting)
                # It moved something: the comparison is not the job's own.
                self.assertNotEqual(cost_sections(predicted["job"])["comparison"],
                                    cost_sections(self.report)["comparison"], setting)

    def test_numerics_settings_are_costed_and_flagged(self):
        got = self.whatif("reram_adc_bits=4", "systolic_bf16=true")
        notes = got["numerics_notes"]
        self.assertEqual(len(notes), 2)
        self.assertIn("reram_adc_bits=4: cost only: quality needs a re-run", notes)
        text = self.cluster.ctl("whatif", self.job_id, "--set", "systolic_bf16=true").stdout
        self.assertIn("systolic_bf16=true: cost only: quality needs a re-run", text)
        self.assertIn("HpT vs GPU-only", text)
        # The ratios as run beside the re-costed ones, before the report.
        self.assertRegex(text, r"\nHpT vs GPU-only \(\w+ baseline\) +as run +what if\n"
                               r"  time +[0-9.]+x +[0-9.]+x\n")

    def test_bad_settings_are_refused_by_name(self):
        run = self.cluster.ctl("whatif", self.job_id, "--set", "systolic_rowz=4", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("systolic_rowz", run.stderr)
        run = self.cluster.ctl("whatif", self.job_id, "--set", "systolic_rows=many", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("systolic_rows='many'", run.stderr)
        run = self.cluster.ctl("whatif", "job-999999", "--set", "systolic_rows=4", check=False)
        self.assertEqual(run.returncode, 4, run.stderr)

    def test_baselines_are_measured_by_the_job_and_by_a_probe(self):
        # The job's own GPU steps, timed by its worker, are a measured row.
        own = [b for b in self.report["hpt"]["comparison"]["baselines"] if b.get("measured")]
        self.assertEqual([b["baseline"] for b in own], ["libtorch"])
        self.assertIn("wall time", own[0]["measured_on"])
        self.assertGreater(own[0]["step_s"], 0)
        self.assertGreater(own[0]["time_ratio"], 0)
        self.assertNotIn("energy_ratio", own[0])  # a CPU measures no energy
        # hpt.probe_steps: the probe runs at the job's end on its GPU worker.
        job_id = self.cluster.train(JOB, "--probe_steps=2", name="probed")
        rows = {b["baseline"]: b for b in self.cluster.job(job_id)["hpt"]["comparison"]["baselines"]
                if b.get("measured")}
        # The probe's eager step is C++'s, not the paper's Python: named so.
        self.assertEqual(sorted(rows), ["bf16", "fused", "graph", "libtorch", "libtorch-eager"])
        for name in ("libtorch-eager", "fused", "bf16"):
            self.assertGreater(rows[name]["step_s"], 0, name)
            self.assertGreater(rows[name]["gpu_only_time_s"], 0, name)
            self.assertIn("probe: median of 2 steps", rows[name]["source"], name)
        self.assertEqual(rows["graph"]["not_run"], "not run: no CUDA (CUDA graphs need a GPU)")
        report = self.cluster.ctl("report", job_id).stdout
        self.assertIn("against each GPU baseline, measured", report)
        self.assertIn("graph          not run: no CUDA", report)
        self.assertIn("fastest GPU-only: ", report)
        # Measured here on a CPU: no row is a measured GPU baseline.
        self.assertNotIn("measured on this job's GPU", report)
        # hptctl probe on a finished job times them again, as asked.
        run = self.cluster.ctl("probe", job_id, "--probe_steps=3")
        self.assertIn("libtorch-eager: eager, per-parameter Adam", run.stdout)
        rows = {b["baseline"]: b for b in self.cluster.job(job_id)["hpt"]["comparison"]["baselines"]
                if b.get("measured")}
        self.assertIn("probe: median of 3 steps", rows["fused"]["source"])
        # A page shows them.
        html = os.path.join(self.cluster.dir, "probed.html")
        self.cluster.ctl("report", job_id, "--format=html", f"--out={html}")
        with open(html) as f:
            page = f.read()
        self.assertIn('id="measured-baselines"', page)
        self.assertIn("not run: no CUDA", page)
        # Refusals: no such job (4), bad step counts (3).
        self.assertEqual(self.cluster.ctl("probe", "job-999999", check=False).returncode, 4)
        run = self.cluster.ctl("probe", job_id, "--probe_steps=5000", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("steps must be in 0..1000", run.stderr)

    def test_chrome_trace_is_valid(self):
        out = os.path.join(self.cluster.dir, "trace.json")
        self.cluster.ctl("trace", self.job_id, "--format=chrome", f"--out={out}")
        trace = json.load(open(out))
        events = trace["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        self.assertGreater(len(slices), 5)
        for e in slices:
            for field in ("name", "ph", "ts", "dur", "pid", "tid", "args"):
                self.assertIn(field, e)
            self.assertGreaterEqual(e["dur"], 0)
            self.assertIn("energy_j", e["args"])
        names = {e["tid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertTrue(all(e["tid"] in names for e in slices))
        kinds = {n.split()[0] for n in names.values()}
        self.assertTrue({"reram", "systolic"} <= kinds, kinds)  # the first LoRA step
        # Nesting: on a track, a slice ends before the next begins, or holds it.
        for tid in names:
            track = sorted((e for e in slices if e["tid"] == tid), key=lambda e: e["ts"])
            open_ends = []
            for e in track:
                while open_ends and open_ends[-1] <= e["ts"] + 1e-6:
                    open_ends.pop()
                if open_ends:
                    self.assertLessEqual(e["ts"] + e["dur"], open_ends[-1] + 1e-6, names[tid])
                open_ends.append(e["ts"] + e["dur"])
        self.assertAlmostEqual(max(e["ts"] + e["dur"] for e in slices) / 1e6,
                               trace["otherData"]["makespan_s"], delta=1e-9)
        record = json.loads(self.cluster.ctl("trace", self.job_id).stdout)
        self.assertEqual({s["phase"] for s in record["shapes"]} >= {"full", "lora", "switch"},
                         True)
        # A step past the record names the steps it holds.
        last = int(self.report["progress"]["total_steps"]) - 1
        run = self.cluster.ctl("trace", self.job_id, "--format=chrome", "--step=999999",
                               f"--out={out}", check=False)
        self.assertEqual(run.returncode, 4, run.stderr)
        self.assertIn(f"step 999999 is not in the job's record: give one of steps 0-{last}",
                      run.stderr)

    def test_sweep_writes_a_table_csv_json_and_plot(self):
        prefix = os.path.join(self.cluster.dir, "sweep")
        run = self.cluster.ctl("sweep", self.job_id, "--grid", "systolic_rows=16,32,64,128",
                               "--grid", "reference_gpu=v100,h100", f"--out={prefix}")
        self.assertIn("bound by", run.stdout)
        rows = list(csv.DictReader(open(prefix + ".csv")))
        self.assertEqual(len(rows), 8)
        self.assertEqual([r["systolic_rows"] for r in rows[:2]], ["16", "16"])
        own = [r for r in rows if r["systolic_rows"] == "128" and r["reference_gpu"] == "v100"][0]
        ratio = self.report["hpt"]["comparison"]["projected_time_ratio"]
        self.assertLess(relative(float(own["projected_time_ratio"]), ratio), 1e-8)
        self.assertEqual(len(json.load(open(prefix + ".json"))["points"]), 8)
        svg = open(prefix + ".svg").read()
        self.assertTrue(svg.startswith("<svg") and svg.count("<path") == 4, svg[:200])
        # A folder as --out: the files go inside it, named for the job.
        folder = os.path.join(self.cluster.dir, "sweeps")
        os.makedirs(folder, exist_ok=True)
        run = self.cluster.ctl("sweep", self.job_id, "--grid", "systolic_rows=16,32",
                               f"--out={folder}")
        inside = os.path.join(folder, self.job_id + "-sweep")
        self.assertIn("wrote " + inside + ".csv, .json and .svg", run.stderr)
        self.assertEqual(sorted(os.listdir(folder)),
                         [self.job_id + "-sweep" + ext for ext in (".csv", ".json", ".svg")])
        self.assertEqual(len(list(csv.DictReader(open(inside + ".csv")))), 2)

    def test_target_search(self):
        ends = json.loads(self.cluster.ctl("sweep", self.job_id, "--grid",
                                           "systolic_clock_hz=1e8,1e9", "--format=json").stdout)
        low, high = [p["projected_time_ratio"] for p in ends["points"]]
        self.assertLess(low, high)
        reach = (low + high) / 2
        run = self.cluster.ctl("sweep", self.job_id, "--grid", "systolic_clock_hz=1e8,1e9",
                               f"--target=time={reach}", check=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("reaches time", run.stdout)
        clock = float(run.stdout.split("systolic_clock_hz=")[1].split()[0])
        self.assertTrue(1e8 < clock < 1e9, run.stdout)
        at = json.loads(self.cluster.ctl("whatif", self.job_id, "--set",
                                         f"systolic_clock_hz={clock}", "--format=json").stdout)
        got = at["job"]["hpt"]["comparison"]["projected_time_ratio"]
        self.assertLess(abs(got - reach) / reach, 1e-3, run.stdout)
        run = self.cluster.ctl("sweep", self.job_id, "--grid", "reram_clock_hz=1e9,4e9",
                               "--target=time=1000", check=False)
        self.assertEqual(run.returncode, 1)
        self.assertIn("no reram_clock_hz in [1000000000, 4000000000] reaches time 1000x",
                      run.stdout)
        self.assertIn("bounds it", run.stdout)


if __name__ == "__main__":
    unittest.main()
