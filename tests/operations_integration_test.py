#!/usr/bin/python3
"""Operating the service: the local launcher's processes, a real Prometheus
(Debian's) scraping them, the Grafana dashboards' queries, and the Python
example client against the live coordinator.

Runs with: <launch.py> <runfiles bin dir> <hptctl> <python_client.py> <proto root>
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

LAUNCH, BIN_DIR, HPTCTL, CLIENT, PROTO_ROOT = [os.path.abspath(a) for a in sys.argv[1:6]]
del sys.argv[1:6]
DEPLOY = os.path.dirname(LAUNCH)
PORT_KEYS = ["HPT_COORDINATOR_GRPC_PORT", "HPT_COORDINATOR_METRICS_PORT",
             "HPT_COORDINATOR_HTTP_PORT", "HPT_GPU_GRPC_PORT",
             "HPT_GPU_METRICS_PORT", "HPT_RERAM_GRPC_PORT", "HPT_RERAM_METRICS_PORT",
             "HPT_SYSTOLIC_GRPC_PORT", "HPT_SYSTOLIC_METRICS_PORT", "HPT_PROMETHEUS_PORT"]
# Small windows and loose thresholds: the tiny job reaches the switch.
HPT_FLAGS = ["--preset=tiny", "--epochs=6", "--stations=8", "--time_steps=256",
             "--check_window_steps=5", "--loss_threshold=0.5", "--weight_threshold=0.5", "--lora_rank=4",
             "--reram_chip_tiles=12"]


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class OperationsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ports = dict(zip(PORT_KEYS, free_ports(len(PORT_KEYS))))
        cls.dir = tempfile.mkdtemp(prefix="hpt-up-", dir=os.environ.get("TEST_TMPDIR"))
        cls.launch = ["/usr/bin/python3", LAUNCH]
        sets = [f"--set={k}={v}" for k, v in cls.ports.items()]
        up = subprocess.run(cls.launch + ["up", "--detach", f"--dir={cls.dir}",
                                          f"--bin_dir={BIN_DIR}", "--scrape_interval=1s"] + sets,
                            capture_output=True, text=True, timeout=300)
        if up.returncode != 0:
            raise RuntimeError(f"launcher failed:\n{up.stdout}\n{up.stderr}")
        cls.up_output = up.stdout
        cls.coordinator = f"127.0.0.1:{cls.ports['HPT_COORDINATOR_GRPC_PORT']}"
        cls.prometheus = f"http://127.0.0.1:{cls.ports['HPT_PROMETHEUS_PORT']}"
        job = subprocess.run([HPTCTL, f"--coordinator={cls.coordinator}", "submit",
                              "--name=ops-hpt", "--watch"] + HPT_FLAGS,
                             capture_output=True, text=True, timeout=600)
        if job.returncode != 0:
            raise RuntimeError(f"hptctl job failed:\n{job.stdout}\n{job.stderr}")
        cls.job_id = re.search(r"submitted (job-\d+)", job.stdout).group(1)
        cls.watch_output = job.stdout

    @classmethod
    def tearDownClass(cls):
        subprocess.run(cls.launch + ["down", f"--dir={cls.dir}"], timeout=60)

    def query(self, expr):
        url = f"{self.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        body = json.loads(get(url))
        self.assertEqual(body["status"], "success", body)
        return body["data"]["result"]

    def eventually(self, expr, deadline_s=60):
        """Polls Prometheus until `expr` has a result (scrapes are periodic)."""
        end = time.time() + deadline_s
        while True:
            result = self.query(expr)
            if result or time.time() > end:
                return result
            time.sleep(0.5)

    def test_a_watch_into_a_log_says_when_the_phase_changes(self):
        # No terminal: a progress line per epoch and per phase, not per step.
        # With why it switched, for a batch job's log.
        self.assertRegex(self.watch_output, r"(?m)^phase: lora \(seen at step \d+\); switched "
                                            r"after step \d+: both tests passed at step \d+; after "
                                            r"(the LoRA trial|\d+ LoRA trial windows), .* \(t-test p "
                                            r"[0-9.e-]+\)$")
        self.assertLess(self.watch_output.count("samples/s"), 40, self.watch_output)

    def test_launcher_prints_every_address(self):
        for name in ["coordinator", "worker-gpu", "worker-reram", "worker-systolic", "prometheus"]:
            self.assertIn(name, self.up_output)
        self.assertIn(self.coordinator, self.up_output)
        # Not hptctl's default port: how to reach it.
        self.assertIn(f"hptctl: export HPT_COORDINATOR={self.coordinator}", self.up_output)

    def test_a_launcher_stopped_by_down_leaves_the_next_up_running(self):
        """`./hpt down` then `./hpt up` at once: the first launcher, in the
        foreground, stops after its processes; it must not stop the new ones."""
        keys = [k for k in PORT_KEYS if k != "HPT_PROMETHEUS_PORT"]
        sets = [f"--set={k}={v}" for k, v in zip(keys, free_ports(len(keys)))]
        run_dir = tempfile.mkdtemp(prefix="hpt-relaunch-", dir=os.environ.get("TEST_TMPDIR"))
        common = [f"--dir={run_dir}", f"--bin_dir={BIN_DIR}", "--no_prometheus"] + sets
        first = subprocess.Popen(self.launch + ["up"] + common, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True,
                                 env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            for line in first.stdout:  # up to its "running" line
                if line.startswith("hpt: running"):
                    break
            self.assertIsNone(first.poll(), "the first launcher ended before it ran")
            # Held still while down and the next up run, so that it looks at
            # its processes only once the new ones are written down.
            first.send_signal(signal.SIGSTOP)
            subprocess.run(self.launch + ["down", f"--dir={run_dir}"], check=True,
                           capture_output=True, timeout=60)
            subprocess.run(self.launch + ["up", "--detach"] + common, check=True,
                           capture_output=True, timeout=300)
            with open(os.path.join(run_dir, "pids.json")) as f:
                second = json.load(f)
            first.send_signal(signal.SIGCONT)
            first.wait(timeout=30)
            for name, pid in second.items():
                os.kill(pid, 0)  # ProcessLookupError: the first launcher stopped it
            with open(os.path.join(run_dir, "pids.json")) as f:
                self.assertEqual(json.load(f), second)
        finally:
            first.kill()
            subprocess.run(self.launch + ["down", f"--dir={run_dir}"], timeout=60)

    def test_promtool_accepts_every_metrics_page(self):
        for key in ["HPT_COORDINATOR_METRICS_PORT", "HPT_GPU_METRICS_PORT",
                    "HPT_RERAM_METRICS_PORT", "HPT_SYSTOLIC_METRICS_PORT"]:
            text = get(f"http://127.0.0.1:{self.ports[key]}/metrics")
            self.assertIn("hpt_build_info", text)
            check = subprocess.run(["promtool", "check", "metrics"], input=text,
                                   capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, f"{key}: {check.stdout}{check.stderr}")

    def test_job_loss_phase_and_device_energy_reach_prometheus(self):
        job = self.job_id
        self.assertTrue(self.eventually(f'hpt_job_loss{{job_id="{job}"}}'))
        phase = self.eventually(f'hpt_job_phase{{job_id="{job}",phase="lora"}} == 1')
        self.assertEqual(len(phase), 1, phase)
        energy = self.eventually(f'hpt_job_device_energy_joules{{job_id="{job}",kind="reram"}} > 0')
        self.assertEqual(len(energy), 1, energy)
        self.assertGreater(float(energy[0]["value"][1]), 0)
        writes = self.eventually('hpt_reram_cell_writes_total{kind="reram"} > 0')
        # 2 layers x 8192 frozen weights x 4 cells (8-bit offset weights in
        # 2-bit cells), one copy each on a 12-tile chip: each cell once.
        self.assertEqual(float(writes[0]["value"][1]), 2 * 8192 * 4)
        # The quality beside persistence: skill = 1 - rmse / persistence's.
        self.assertTrue(self.eventually(f'hpt_job_test_metric{{job_id="{job}",metric="skill"}}'))
        quality = {r["metric"]["metric"]: float(r["value"][1]) for r in
                   self.query(f'hpt_job_test_metric{{job_id="{job}"}}')}
        self.assertAlmostEqual(quality["skill"],
                               1 - quality["rmse"] / quality["persistence_rmse"], places=4)

    def test_every_dashboard_expression_returns_data(self):
        exprs = []
        for path in sorted(glob.glob(os.path.join(DEPLOY, "grafana/dashboards/*.json"))):
            with open(path) as f:
                d = json.load(f)
            for panel in d["panels"]:
                exprs += [(path, t["expr"]) for t in panel["targets"]]
            exprs += [(path, a["expr"]) for a in d["annotations"]["list"]]
        self.assertGreaterEqual(len(exprs), 20)
        # The job's series must have been scraped after it finished.
        self.eventually(f'hpt_job_switch_step{{job_id="{self.job_id}"}} > 0')
        for path, expr in exprs:
            with self.subTest(dashboard=os.path.basename(path), expr=expr):
                result = self.eventually(expr.replace("$job", self.job_id), deadline_s=20)
                self.assertTrue(result, f"no data for {expr}")

    def test_python_client_submits_watches_and_reads_the_report(self):
        spec = ('name: "python-example" model { preset: "tiny" } '
                'data { synthetic { stations: 8 time_steps: 256 } } training { epochs: 6 } '
                'hpt { check_window_samples: 5 loss_threshold: 0.5 weight_threshold: 0.5 lora { rank: 4 } }')
        stubs = tempfile.mkdtemp(prefix="stubs-", dir=os.environ.get("TEST_TMPDIR"))
        run = subprocess.run(["/usr/bin/python3", CLIENT, f"--coordinator={self.coordinator}",
                              f"--spec={spec}", f"--stubs_dir={stubs}",
                              f"--proto_root={PROTO_ROOT}"],
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertRegex(run.stdout, r"submitted job-\d+ \(python-example\)")
        self.assertIn("): succeeded", run.stdout)
        # A line per finished epoch, each naming its own epoch once and the
        # phase by name (the protocol carries it as an enum).
        epochs = re.findall(r"^  epoch (\d+)/6 done  step \d+/\d+  loss \S+  phase (\w+)$",
                            run.stdout, re.M)
        self.assertEqual([e for e, _ in epochs], [str(e) for e in range(1, 7)], run.stdout)
        self.assertIn("switched to LoRA at step", run.stdout)
        self.assertLessEqual({p for _, p in epochs}, {"full", "trial", "lora"}, run.stdout)
        self.assertEqual(epochs[-1][1], "lora", run.stdout)
        self.assertIn("HpT vs GPU-only: time", run.stdout)
        self.assertRegex(run.stdout, r"test RMSE \d")


if __name__ == "__main__":
    unittest.main(verbosity=2)
