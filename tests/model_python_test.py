#!/usr/bin/python3
"""The trained model leaves in the forms a scientist loads in Python, checked
in the virtual environment ./hpt setup makes (torch, numpy, safetensors from
PyPI), against the service's own predictions:

- a tiny HpT job trains through its switch on real processes (coordinator,
  2 gpu, reram, systolic workers over loopback gRPC);
- `hptctl export` writes model.pt, model.safetensors and model.json;
- `torch.jit.load("model.pt")` in a fresh interpreter with no project code
  gives a module with a forward;
- its predictions on inputs equal `hptctl predict` (JobService.Predict) to
  1e-5, for a batch and for one sample, and so do the safetensors weights
  loaded into it with load_state_dict;
- bad inputs to predict are refused naming the field;
- a job on a scientist's own wide CSV (named stations, degrees): the
  exported module takes a window of raw values and gives forecasts in the
  data's units, equal to `hptctl predict` on the same raw window, and its
  RMSE and MAE over the test split rebuilt from the CSV and model.json
  alone equal the report's test metrics to 1e-5.

Runs with: <hpt_coordinator> <hpt_worker> <hptctl>
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
from safetensors.torch import load_file, safe_open

import hpt_cluster

COORDINATOR, WORKER, HPTCTL = [os.path.abspath(a) for a in sys.argv[1:4]]
del sys.argv[1:4]


class ModelInPythonTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cluster = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL, prefix="model-")
        cls.job_id = cls.cluster.train(hpt_cluster.TINY_JOB, name="model")
        cls.dir = cls.cluster.dir
        cls.model = os.path.join(cls.dir, "model.pt")
        cls.export = cls.cluster.ctl("export", cls.job_id, f"--out={cls.model}")
        with open(os.path.join(cls.dir, "model.json")) as f:
            cls.config = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def predict(self, x, name):
        path_in = os.path.join(self.dir, name + ".npy")
        path_out = os.path.join(self.dir, name + ".out.npy")
        np.save(path_in, x)
        self.cluster.ctl("predict", self.job_id, f"--input={path_in}", f"--out={path_out}")
        return np.load(path_out)

    def test_the_job_switched_so_the_export_merges_its_adapters(self):
        job = self.cluster.job(self.job_id)
        self.assertEqual(job["state"], "SUCCEEDED")
        self.assertGreater(int(job["hpt"]["switch_step"]), 0)
        self.assertIn("TorchScript with its forward", self.export.stdout)
        for name in ("model.pt", "model.safetensors", "model.json"):
            self.assertTrue(os.path.getsize(os.path.join(self.dir, name)) > 0, name)

    def test_torchscript_predictions_equal_the_services(self):
        rng = np.random.default_rng(3)
        tokens, features = 16, int(self.config["input_features"])
        x = rng.standard_normal((5, tokens, features)).astype(np.float32)
        served = self.predict(x, "batch")
        self.assertEqual(served.shape, (5, tokens, int(self.config["output_features"])))
        m = torch.jit.load(self.model)
        self.assertTrue(hasattr(m, "forward"))
        with torch.no_grad():
            mine = m(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(mine, served, rtol=1e-5, atol=1e-5)
        print(f"largest |TorchScript - service| on {x.shape}: {np.abs(mine - served).max():.3g}",
              file=sys.stderr)
        # One sample, [tokens, features]: the service answers [tokens, out].
        one = self.predict(x[1], "one")
        np.testing.assert_allclose(one, served[1], rtol=1e-5, atol=1e-5)
        # Not a constant model: different inputs, different outputs.
        self.assertGreater(np.abs(served[0] - served[1]).max(), 1e-4)

    def test_the_four_lines_a_scientist_types(self):
        x = np.random.default_rng(4).standard_normal((2, 16, int(self.config["input_features"])))
        np.save(os.path.join(self.dir, "x.npy"), x.astype(np.float32))
        code = ("import numpy as np, torch\n"
                "m = torch.jit.load('model.pt')\n"
                "x = torch.from_numpy(np.load('x.npy'))\n"
                "print(tuple(m(x).shape))\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        run = subprocess.run([sys.executable, "-c", code], cwd=self.dir, env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.strip(), f"(2, 16, {self.config['output_features']})")

    def test_safetensors_weights_and_config(self):
        # (The module's data_mean and data_sd buffers travel in the file too.)
        path = os.path.join(self.dir, "model.safetensors")
        weights = load_file(path)
        m = torch.jit.load(self.model)
        state = m.state_dict()
        self.assertEqual(sorted(weights), sorted(state))
        self.assertIn("layers.0.self_attn.q_proj.weight", weights)
        for name, tensor in weights.items():
            self.assertEqual(tensor.dtype, torch.float32, name)
            self.assertTrue(torch.equal(tensor, state[name]), name)
        with safe_open(path, framework="pt") as f:
            meta = f.metadata()
        config = {k: v for k, v in self.config.items() if k != "data_units"}
        self.assertEqual(json.loads(meta["hpt_model_config"]), config)
        self.assertEqual(json.loads(meta["hpt_data_units"]), self.config["data_units"])
        self.assertEqual(meta["hpt_job"], self.job_id)
        # Weights loaded into a module whose own are wiped give the service's
        # predictions back.
        with torch.no_grad():
            for p in m.parameters():
                p.zero_()
        m.load_state_dict(weights)
        x = np.random.default_rng(5).standard_normal((3, 16, int(self.config["input_features"])))
        x = x.astype(np.float32)
        with torch.no_grad():
            mine = m(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(mine, self.predict(x, "safetensors"), rtol=1e-5, atol=1e-5)

    def test_bad_inputs_are_refused_naming_the_field(self):
        wrong = os.path.join(self.dir, "wrong.npy")
        np.save(wrong, np.zeros((2, 16, 99), np.float32))
        run = self.cluster.ctl("predict", self.job_id, f"--input={wrong}", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("PredictRequest.input: input is [2, 16, 99]", run.stderr)
        ints = os.path.join(self.dir, "ints.npy")
        np.save(ints, np.zeros((2, 3), np.int64))
        run = self.cluster.ctl("predict", self.job_id, f"--input={ints}", check=False)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("'descr' must be '<f4' (float32) or '<f8' (float64)", run.stderr)
        run = self.cluster.ctl("predict", "job-999999", f"--input={wrong}", check=False)
        self.assertIn("NOT_FOUND", run.stderr)
        # A gap in a window would come back as NaN forecasts: refused where it is.
        gap = os.path.join(self.dir, "gap.npy")
        x = np.zeros((2, 16, int(self.config["input_features"])), np.float32)
        x[1, 3, 5] = np.nan
        np.save(gap, x)
        run = self.cluster.ctl("predict", self.job_id, f"--input={gap}", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("PredictRequest.input: input holds a non-finite value (nan) at [1, 3, 5]: "
                      "fill the gaps first", run.stderr)
        # Output names that would write the wrong format, or over a sibling.
        run = self.cluster.ctl("predict", self.job_id, f"--input={gap}",
                               f"--out={self.dir}/y.csv", check=False)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("predict writes a NumPy .npy file; name it so (--out y.npy)", run.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "y.csv")))
        run = self.cluster.ctl("export", self.job_id, f"--out={self.dir}/m.json", check=False)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("is where its .json sibling goes: give --out model.pt", run.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "m.json")))


STATIONS = ["Pullman", "Prosser", "Othello", "Lind", "Walla Walla", "Wenatchee"]


class ModelInDataUnitsTest(unittest.TestCase):
    """A wide CSV in degrees with a time column and a header of station names, no split
    given."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="units-data-", dir=os.environ.get("TEST_TMPDIR"))
        cls.cluster = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL, prefix="units-",
                                          coordinator_flags=[f"--data_root={cls.dir}"])
        rng = np.random.default_rng(11)
        hours = np.arange(600)
        cls.raw = np.stack([15 + 8 * np.sin(2 * np.pi * (hours + 3 * i) / 24) + i
                            + rng.normal(0, 0.8, hours.size) for i in range(len(STATIONS))],
                           axis=1).astype(np.float32)
        cls.csv = os.path.join(cls.dir, "temps.csv")
        with open(cls.csv, "w") as f:
            f.write(",".join(["time"] + STATIONS) + "\n")
            for hour, row in zip(hours, cls.raw):
                when = f"2024-03-{1 + hour // 24:02d} {hour % 24:02d}:00"
                f.write(",".join([when] + [f"{v:.3f}" for v in row]) + "\n")
        cls.raw = np.loadtxt(cls.csv, delimiter=",", skiprows=1, dtype=np.float32,
                             usecols=range(1, len(STATIONS) + 1))
        cls.job_id = cls.cluster.train(
            ["--preset=tiny", f"--csv={cls.csv}", "--input_steps=24", "--horizon=1",
             "--epochs=2", "--batch_size=16", "--mode=full", "--seed=5"], name="temps")
        cls.job = cls.cluster.job(cls.job_id)
        cls.model = os.path.join(cls.dir, "temps.pt")
        cls.cluster.ctl("export", cls.job_id, f"--out={cls.model}")
        with open(os.path.join(cls.dir, "temps.json")) as f:
            cls.units = json.load(f)["data_units"]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_the_model_carries_its_stations_normalisation_and_window(self):
        u = self.units
        self.assertEqual(u["stations"], STATIONS)
        self.assertEqual((u["input_steps"], u["horizon"]), (24, 1))
        self.assertTrue(u["per_token"])
        # The time column: what a row's step is, and when the data and its test split start.
        self.assertEqual(u["time_column"], "time")
        self.assertEqual(int(u["time_step_s"]), 3600)
        march_1 = 1709251200  # 2024-03-01 00:00 UTC
        self.assertEqual(int(u["first_time_s"]), march_1)
        self.assertEqual(int(u["test_first_time_s"]), march_1 + 3600 * int(u["test_begin_row"]))
        # The training rows' statistics: the first 80 % (480 rows), per station.
        train = self.raw[:480]
        np.testing.assert_allclose(u["mean"], train.mean(axis=0), rtol=1e-5)
        np.testing.assert_allclose(u["sd"], train.std(axis=0), rtol=1e-4)

    def windows(self):
        """The test split's windows from the CSV and model.json alone."""
        u = self.units
        span = u["input_steps"] + u["horizon"]
        begin, end = int(u["test_begin_row"]), int(u["test_end_row"])
        starts = range(begin, end - span + 1)
        x = np.stack([self.raw[s:s + u["input_steps"]].T for s in starts])
        y = np.stack([self.raw[s + span - 1][:, None] for s in starts])
        return x.astype(np.float32), y

    def test_raw_windows_in_forecasts_in_degrees_out_equal_to_the_report(self):
        x, truth = self.windows()
        m = torch.jit.load(self.model)
        with torch.no_grad():
            forecast = m(torch.from_numpy(x)).numpy()
        path = os.path.join(self.dir, "raw.npy")
        np.save(path, x)
        self.cluster.ctl("predict", self.job_id, f"--input={path}", f"--out={path}.out.npy")
        served = np.load(path + ".out.npy")
        np.testing.assert_allclose(forecast, served, rtol=1e-5, atol=1e-4)
        metrics = self.job["test_metrics"]
        self.assertEqual(int(metrics["values"]), truth.size)
        rmse = float(np.sqrt(np.mean((forecast.astype(np.float64) - truth) ** 2)))
        mae = float(np.mean(np.abs(forecast.astype(np.float64) - truth)))
        print(f"test RMSE {rmse:.6f} (report {metrics['rmse']:.6f}), MAE {mae:.6f} "
              f"(report {metrics['mae']:.6f}) degrees", file=sys.stderr)
        self.assertAlmostEqual(rmse, metrics["rmse"], delta=1e-5 * metrics["rmse"])
        self.assertAlmostEqual(mae, metrics["mae"], delta=1e-5 * metrics["mae"])
        # Degrees, not z-scores: the forecasts sit where the data does.
        self.assertLess(abs(forecast.mean() - truth.mean()), 2.0)

    def test_normalised_units_remain_on_request(self):
        x, _ = self.windows()
        u = self.units
        z = ((x - np.array(u["mean"], np.float32)[:, None]) /
             np.array(u["sd"], np.float32)[:, None]).astype(np.float32)
        path = os.path.join(self.dir, "z.npy")
        np.save(path, z)
        self.cluster.ctl("predict", self.job_id, f"--input={path}", f"--out={path}.out.npy",
                         "--normalised")
        m = torch.jit.load(self.model)
        with torch.no_grad():
            mine = m.forward_normalised(torch.from_numpy(z)).numpy()
        np.testing.assert_allclose(mine, np.load(path + ".out.npy"), rtol=1e-5, atol=1e-5)
        # A window of another station count is refused naming both counts.
        np.save(path, x[:, :4])
        run = self.cluster.ctl("predict", self.job_id, f"--input={path}", check=False)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("input has 4 tokens; the model's data has 6 stations", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
