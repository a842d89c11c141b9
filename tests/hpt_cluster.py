"""A local HpT cluster for Python tests: a coordinator and four workers
(2 gpu, reram, systolic) as real processes on loopback, driven through
hptctl.

    cluster = hpt_cluster.Cluster(coordinator, worker, hptctl)
    job_id = cluster.train(hpt_cluster.TINY_JOB)
    cluster.stop()
"""
import json
import os
import subprocess
import tempfile
import time

# A tiny HpT job that switches within its 6 epochs (the demo's settings).
TINY_JOB = ["--preset=tiny", "--stations=16", "--time_steps=512", "--epochs=6",
            "--batch_size=16", "--lr=0.002", "--gpu_workers=2", "--check_window_steps=5",
            "--loss_threshold=0.5", "--weight_threshold=0.5", "--lora_rank=4", "--seed=7"]


class Cluster:
    """Processes log to <dir>/<name>.log; ports come from the port file."""

    def __init__(self, coordinator, worker, hptctl, worker_flags=(), coordinator_flags=(),
                 prefix="cluster-"):
        self.hptctl = hptctl
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TEST_TMPDIR"))
        self.procs = []
        port_file = os.path.join(self.dir, "coordinator.port")
        self.start([coordinator, "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
                    f"--port_file={port_file}", f"--state_dir={self.dir}/state"] +
                   list(coordinator_flags), "coordinator")
        self.ports = self.wait_ports(port_file)
        self.port = self.ports["grpc"]
        for i, kind in enumerate(["gpu", "gpu", "reram", "systolic"]):
            self.start([worker, f"--kind={kind}", "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
                        "--threads=1", f"--coordinator=127.0.0.1:{self.port}"] + list(worker_flags),
                       f"worker{i}")

    def start(self, argv, name):
        with open(os.path.join(self.dir, name + ".log"), "w") as log:
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def wait_ports(self, path):
        """{"grpc": N, "metrics": M, "http": H} from 'grpc=N metrics=M http=H'."""
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read()
                if text.endswith("\n"):
                    return {k: int(v) for k, v in (p.split("=") for p in text.split())}
            if self.procs[0].poll() is not None:
                raise RuntimeError("coordinator exited")
            time.sleep(0.05)
        raise RuntimeError("no coordinator port")

    def ctl(self, *args, check=True):
        run = subprocess.run([self.hptctl, f"--coordinator=127.0.0.1:{self.port}",
                              "--timeout_s=120"] + list(args),
                             capture_output=True, text=True, timeout=300)
        if check and run.returncode != 0:
            raise AssertionError(f"hptctl {args} exited {run.returncode}:\n{run.stdout}\n"
                                 f"{run.stderr}")
        return run

    def train(self, job_flags, *extra, name="test"):
        """Submits, watches to the end; the newest job's id."""
        self.ctl("submit", f"--name={name}", *job_flags, *extra, "--watch")
        jobs = json.loads(self.ctl("list", "--format=json").stdout)
        return jobs["jobs"][0]["job_id"]

    def job(self, job_id):
        return json.loads(self.ctl("status", job_id, "--format=json").stdout)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
