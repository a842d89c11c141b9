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
- bad inputs to predict are refused naming the field.

Runs with: <hpt_coordinator> <hpt_worker> <hptctl>
"""
import json
import os
import subprocess
import sys
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
        self.assertEqual(json.loads(meta["hpt_model_config"]), self.config)
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
