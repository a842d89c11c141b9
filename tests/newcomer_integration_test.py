#!/usr/bin/python3
"""A scientist's first session, on real processes (a coordinator and four
workers over loopback, driven through hptctl), for what a first session tried:

- a check window under 3 steps is rounded up, and submit says so;
- a relative --csv path is the user's, not the coordinator's working
  directory's; a missing file is a refused request (exit 3) that names the
  data roots, never "not found" (exit 4, "no such job");
- an unknown flag is a bad command line (exit 2); `cancel` waits and
  prints the cancelled job;
- `hptctl COMMAND --help` (or `hptctl help COMMAND`) lists that command's flags with their defaults;
  --d_model, --num_layers and --heads shape the model;
- `list --state` filters; a submit without data says it trains on a
  synthetic series;
- $HPT_COORDINATOR gives the coordinator's address where --coordinator
  does not;
- the river-gauge CSV the operations guide makes trains through the real
  loader, its times read from its datetime column.

Runs with: <hpt_coordinator> <hpt_worker> <hptctl> <examples/make_river_csv.py>
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import hpt_cluster

COORDINATOR, WORKER, HPTCTL, RIVER = [os.path.abspath(a) for a in sys.argv[1:5]]
del sys.argv[1:5]
SMALL = ["--preset=tiny", "--epochs=1", "--batch_size=16", "--seed=3"]


class NewcomerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="newcomer-data-", dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(cls.data, "temps.csv"), "w") as f:
            f.write("north,south,east\n")
            for t in range(200):
                f.write(f"{15 + (t % 24) * 0.3:.2f},{12 + (t % 12) * 0.2:.2f},{14 + t % 7:.2f}\n")
        cls.cluster = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL, prefix="newcomer-",
                                          coordinator_flags=[f"--data_root={cls.data}"])

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def hptctl(self, *args, cwd=None):
        return subprocess.run([HPTCTL, f"--coordinator=127.0.0.1:{self.cluster.port}",
                               "--timeout_s=120"] + list(args),
                              capture_output=True, text=True, timeout=300, cwd=cwd)

    def test_a_short_window_is_rounded_up_and_said(self):
        run = self.hptctl("submit", *SMALL, "--stations=8", "--time_steps=256",
                          "--check_window_steps=1", "--watch")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("note: hpt.check_window: 16 samples = 1 step at batch 16 rounded up to "
                      "3 steps (48 samples)", run.stdout)
        job = json.loads(self.hptctl("list", "--format=json").stdout)["jobs"][0]
        self.assertEqual(int(job["hpt"]["check_window_steps"]), 3)

    def test_a_relative_path_is_the_users_and_a_missing_one_is_refused(self):
        run = self.hptctl("submit", *SMALL, "--csv=temps.csv", "--input_steps=6", "--watch",
                          cwd=self.data)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("succeeded", run.stdout)
        # No split given: the last 20 % of the 200 rows test, said, and scored.
        self.assertIn("note: data: train on rows 0-159, test on the last 40 (rows 160-199): the "
                      "last 20 % in time, as the data gave no split", run.stdout)
        job = json.loads(self.hptctl("list", "--format=json").stdout)["jobs"][0]
        self.assertGreater(job["test_metrics"]["rmse"], 0)
        self.assertGreater(int(job["test_metrics"]["values"]), 0)
        run = self.hptctl("submit", *SMALL, "--csv=nowhere.csv", cwd=self.data)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("FAILED_PRECONDITION", run.stderr)
        self.assertIn(os.path.join(self.data, "nowhere.csv") + ": no such file or directory",
                      run.stderr)
        self.assertIn("data roots: " + os.path.realpath(self.data), run.stderr)

    def test_asking_for_more_workers_than_there_are_is_said_at_once(self):
        run = self.hptctl("submit", *SMALL, "--gpu_workers=4", "--name=wide")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("note: placement.gpu_workers: the job asks for 4 GPU workers and 2 are "
                      "registered now: it waits up to 1m for 2 more, then fails", run.stdout)
        self.assertIn("HPT_GPU_WORKERS=4 ./hpt up", run.stdout)
        job_id = run.stdout.split()[1]
        deadline = time.time() + 20
        waiting = ""
        while time.time() < deadline and not waiting:
            waiting = json.loads(self.hptctl("status", job_id, "--format=json").stdout).get(
                "waiting_for", "")
            time.sleep(0.1)
        self.assertEqual(waiting, "4 GPU workers (2 registered), up to 1m, then it fails")
        metrics = urllib.request.urlopen(
            f"http://127.0.0.1:{self.cluster.ports['metrics']}/metrics").read().decode()
        self.assertRegex(metrics, r'hpt_job_waiting_for_workers\{[^}]*job_id="%s"[^}]*\} 1' % job_id)
        self.assertIn("cancelled", self.hptctl("cancel", job_id).stdout)

    def test_a_missing_cell_is_refused_naming_the_option_or_interpolated(self):
        with open(os.path.join(self.data, "gap.csv"), "w") as f:
            f.write("north,south\n")
            for t in range(120):
                f.write(("" if t == 50 else f"{15 + t % 24 * 0.3:.2f}") + f",{12 + t % 12:.1f}\n")
        run = self.hptctl("submit", *SMALL, "--csv=gap.csv", "--input_steps=6", cwd=self.data)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("gap.csv:52:1: missing value (data.missing: interpolate or drop_rows",
                      run.stderr)
        run = self.hptctl("submit", *SMALL, "--csv=gap.csv", "--input_steps=6",
                          "--missing=interpolate", "--mode=full", "--watch", cwd=self.data)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("csv, 120 time steps x 2 stations, 1 gap interpolated", run.stdout)
        run = self.hptctl("submit", *SMALL, "--csv=gap.csv", "--missing=guess", cwd=self.data)
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("data.missing 'guess' is not refuse, interpolate or drop_rows", run.stderr)

    def test_delete_forgets_a_finished_job_after_asking(self):
        run = self.hptctl("submit", *SMALL, "--stations=4", "--time_steps=200", "--mode=full",
                          "--name=scratch", "--watch")
        self.assertEqual(run.returncode, 0, run.stderr)
        job_id = run.stdout.split()[1]
        # No one to answer (stdin is not a terminal): it says what would go.
        run = self.hptctl("delete", job_id)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertRegex(run.stderr, f"delete asks before it deletes {job_id} \\(scratch, "
                         r"succeeded\): its \d+ checkpoint\(s\), its trained model, its history "
                         r"and work record; give --yes")
        run = self.hptctl("delete", job_id, "--yes")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stdout.strip(),
                         f"^deleted {job_id} \\(\\d+ checkpoint file\\(s\\), its model\\)$")
        self.assertEqual(self.hptctl("status", job_id).returncode, 4)
        self.assertNotIn(job_id, self.hptctl("list").stdout)
        # A job that still runs is not deleted.
        run = self.hptctl("submit", "--preset=tiny", "--epochs=200", "--mode=full")
        running = run.stdout.split()[1]
        run = self.hptctl("delete", running, "--yes")
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertIn("only a finished job can be deleted (hptctl cancel it first)", run.stderr)
        self.hptctl("cancel", running)

    def test_unknown_flags_are_a_bad_command_line(self):
        run = self.hptctl("submit", "--epochz=3")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("unknown flag --epochz (did you mean 'epochs'?); hptctl submit --help "
                      "lists its flags", run.stderr)
        # A flag of another command is not offered: predict's --input is not submit's.
        run = self.hptctl("submit", "--inputs=x.npy")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertNotIn("did you mean 'input'", run.stderr)
        self.assertEqual(self.hptctl("list", "--state=bogus").returncode, 2)

    def test_cancel_waits_and_says_cancelled(self):
        run = self.hptctl("submit", "--preset=tiny", "--epochs=200", "--stations=8",
                          "--time_steps=512", "--name=long")
        self.assertEqual(run.returncode, 0, run.stderr)
        job_id = run.stdout.split()[1]
        run = self.hptctl("cancel", job_id)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn(f"job {job_id} (long): cancelled", run.stdout)
        # At a step boundary the trainer stops; within a step the cancel
        # cuts the worker's call: either way it says where.
        self.assertRegex(run.stdout,
                         r"\n  error      cancelled (at|by request after) step \d+\n")
        listed = self.hptctl("list", "--state=cancelled").stdout
        self.assertIn(job_id, listed)
        self.assertNotIn(job_id, self.hptctl("list", "--state=succeeded").stdout)

    def test_each_command_has_its_own_help_and_the_model_its_shape_flags(self):
        run = self.hptctl("submit", "--help")
        self.assertEqual(run.returncode, 0, run.stderr)
        for flag in ("--epochs=0", "--csv", "--d_model=0", "--num_layers=0", "--heads=0",
                     "--precision", "--probe_steps=0"):
            self.assertIn("  " + flag, run.stdout, flag)
        self.assertIn("flags of every command:\n", run.stdout)
        self.assertIn("  --coordinator=127.0.0.1:50051", run.stdout)
        self.assertNotIn("--input=", run.stdout)  # predict's, not submit's
        predict = self.hptctl("predict", "--help").stdout
        self.assertIn("  --input\n", predict)
        self.assertNotIn("--epochs", predict)
        # `hptctl help [COMMAND]` is the same help, exit 0.
        run = self.hptctl("help", "predict")
        self.assertEqual((run.returncode, run.stdout), (0, predict), run.stderr)
        run = self.hptctl("help")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("commands:\n  submit", run.stdout)
        self.assertNotIn("unknown command", run.stdout + run.stderr)
        run = self.hptctl("submit", *SMALL, "--stations=8", "--time_steps=256", "--d_model=32",
                          "--num_layers=1", "--heads=2", "--mode=full", "--watch",
                          "--format=json")
        self.assertEqual(run.returncode, 0, run.stderr)
        job = json.loads(self.hptctl("list", "--format=json").stdout)["jobs"][0]
        model = job["spec"]["model"]
        self.assertEqual((model["d_model"], model["num_layers"], model["num_heads"]), (32, 1, 2))

    def test_a_submit_without_data_says_it_is_synthetic(self):
        run = self.hptctl("submit", "--preset=tiny", "--epochs=1", "--mode=full")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("note: data: no source given, so the job trains on a synthetic series "
                      "(16 stations x 512 steps)", run.stdout)

    def test_a_run_too_short_for_a_check_is_told_at_submission(self):
        # The synthetic series makes a few dozen steps an epoch at batch 16;
        # with windows of 400 steps the first check would close at step 1200.
        run = self.hptctl("submit", *SMALL, "--check_window_steps=400")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stdout, r"note: hpt: the run's \d+ steps \(1 epoch of \d+\) end "
                         r"before the phase controller's first check, at step 1200 \(the third "
                         r"window of 400\), so it trains every parameter throughout and HpT "
                         r"saves nothing; give --epochs=\d+ or more")
        self.assertNotIn("first check", self.hptctl("submit", *SMALL).stdout)

    def test_the_coordinators_address_may_come_from_the_environment(self):
        env = dict(os.environ, HPT_COORDINATOR=f"127.0.0.1:{self.cluster.port}")
        run = subprocess.run([HPTCTL, "list"], capture_output=True, text=True, timeout=60,
                             env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(run.stdout.startswith("JOB ") or run.stdout == "no jobs\n", run.stdout)
        # The flag wins over the environment, and the failure names the
        # address it tried and both ways to give another.
        run = subprocess.run([HPTCTL, "--coordinator=127.0.0.1:1", "--timeout_s=5", "list"],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(run.returncode, 5, run.stderr)
        self.assertIn("hptctl: is the coordinator running at 127.0.0.1:1? (start it with "
                      "./hpt up, or give its address: --coordinator=HOST:PORT or "
                      "$HPT_COORDINATOR)", run.stderr)

    def test_the_guides_river_csv_trains(self):
        path = os.path.join(self.data, "river.csv")
        made = subprocess.run(["/usr/bin/python3", RIVER, f"--out={path}", "--rows=400",
                               "--gauges=4"], capture_output=True, text=True, timeout=60)
        self.assertEqual(made.returncode, 0, made.stderr)
        self.assertEqual(made.stdout, f"wrote {path}: 400 hours x 4 gauges\n")
        run = self.hptctl("submit", *SMALL, f"--csv={path}", "--input_steps=6", "--watch")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("data       csv, 400 time steps x 4 stations", run.stdout)
        self.assertIn("time       2023-01-01 00:00 to 2023-01-17 15:00 UTC, every 1 h (column "
                      "datetime)", run.stdout)
        self.assertRegex(run.stdout, r"quality    test RMSE [0-9.]+, MAE [0-9.]+; skill -?[0-9.]+ "
                                     r"over persistence")


if __name__ == "__main__":
    unittest.main(verbosity=2)
