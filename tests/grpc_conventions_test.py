#!/usr/bin/python3
"""gRPC conventions, checked with stock PyPI clients and no .proto files:

- grpc.health.v1 answers per service name: SERVING for hpt.JobService and
  hpt.WorkerRegistry at the coordinator and hpt.WorkerService at a worker,
  NOT_FOUND for a name the server lacks; a Watch sees NOT_SERVING when the
  worker shuts down;
- server reflection describes every service it lists, and a client built
  from reflection alone calls Health.Check and JobService.ListJobs/GetJob;
- `hptctl health` (the compose healthcheck) exits 0 on SERVING.

Runs with: <hpt_coordinator> <hpt_worker> <hptctl>
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase)

COORDINATOR, WORKER, HPTCTL = [os.path.abspath(a) for a in sys.argv[1:4]]
del sys.argv[1:4]


def start(argv, log_path, port_file):
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv + [f"--port_file={port_file}"], stdout=log,
                                stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                parts = dict(p.split("=") for p in f.read().split() if "=" in p)
            if "grpc" in parts:
                return proc, int(parts["grpc"])
        if proc.poll() is not None:
            raise RuntimeError(f"{argv[0]} exited; see {log_path}")
        time.sleep(0.05)
    raise RuntimeError(f"{argv[0]} wrote no port")


class GrpcConventionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="conventions-", dir=os.environ.get("TEST_TMPDIR"))
        cls.coordinator, cls.port = start(
            [COORDINATOR, "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
             f"--state_dir={cls.dir}/state"],
            os.path.join(cls.dir, "coordinator.log"), os.path.join(cls.dir, "c.port"))
        cls.worker, cls.worker_port = start(
            [WORKER, "--kind=systolic", "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
             f"--coordinator=127.0.0.1:{cls.port}"],
            os.path.join(cls.dir, "worker.log"), os.path.join(cls.dir, "w.port"))
        cls.channel = grpc.insecure_channel(f"127.0.0.1:{cls.port}")

    @classmethod
    def tearDownClass(cls):
        for p in (cls.worker, cls.coordinator):
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=20)

    def check(self, channel, service):
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status

    def test_health_answers_by_service_name(self):
        serving = health_pb2.HealthCheckResponse.SERVING
        for name in ("", "hpt.JobService", "hpt.WorkerRegistry"):
            self.assertEqual(self.check(self.channel, name), serving, name)
        with self.assertRaises(grpc.RpcError) as e:
            self.check(self.channel, "hpt.NoSuchService")
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        worker = grpc.insecure_channel(f"127.0.0.1:{self.worker_port}")
        self.assertEqual(self.check(worker, "hpt.WorkerService"), serving)
        run = subprocess.run([HPTCTL, f"--coordinator=127.0.0.1:{self.port}", "health"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.strip(), "hpt.JobService: SERVING")
        run = subprocess.run([HPTCTL, f"--coordinator=127.0.0.1:{self.port}", "health",
                              "hpt.NoSuchService"], capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 4, run.stderr)

    def test_health_warns_where_anyone_can_use_the_service(self):
        # A coordinator whose port the host publishes on every interface
        # (compose with HPT_BIND=0.0.0.0), without TLS or tokens: it says so
        # in its log, and hptctl health says so to the client. It listens
        # on loopback here all the same.
        env = dict(os.environ, HPT_PUBLISHED_ON="0.0.0.0")
        log_path = os.path.join(self.dir, "exposed.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [COORDINATOR, "--listen=127.0.0.1:0", "--metrics=", "--http=", "--no_state",
                 f"--port_file={self.dir}/exposed.port"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.time() + 60
            while not os.path.exists(f"{self.dir}/exposed.port") and time.time() < deadline:
                self.assertIsNone(proc.poll(), open(log_path).read())
                time.sleep(0.05)
            with open(f"{self.dir}/exposed.port") as f:
                port = dict(p.split("=") for p in f.read().split())["grpc"]
            with open(log_path) as f:
                self.assertIn("WARNING: the JobService is reachable on 0.0.0.0 without TLS or "
                              "tokens: anyone who reaches it can submit", f.read())
            run = subprocess.run([HPTCTL, f"--coordinator=127.0.0.1:{port}", "health"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(run.returncode, 0, run.stderr)
            lines = run.stdout.strip().split("\n")
            self.assertEqual(lines[0], "hpt.JobService: SERVING")
            self.assertTrue(lines[1].startswith("warning: the JobService is reachable on 0.0.0.0"),
                            run.stdout)
        finally:
            proc.terminate()
            proc.wait(timeout=20)

    def test_reflection_describes_and_calls_every_listed_service(self):
        db = ProtoReflectionDescriptorDatabase(self.channel)
        services = db.get_services()
        self.assertTrue({"hpt.JobService", "hpt.WorkerRegistry", "grpc.health.v1.Health",
                         "grpc.reflection.v1alpha.ServerReflection"} <= set(services), services)
        pool = DescriptorPool(db)
        for name in services:
            self.assertGreater(len(pool.FindServiceByName(name).methods), 0, name)

        def call(service_name, method, **fields):
            m = pool.FindServiceByName(service_name).methods_by_name[method]
            request = message_factory.GetMessageClass(m.input_type)
            response = message_factory.GetMessageClass(m.output_type)
            rpc = self.channel.unary_unary(f"/{service_name}/{method}",
                                           request_serializer=request.SerializeToString,
                                           response_deserializer=response.FromString)
            return rpc(request(**fields), timeout=10)

        self.assertEqual(call("grpc.health.v1.Health", "Check", service="hpt.JobService").status,
                         1)  # SERVING, by the number reflection described
        self.assertEqual(len(call("hpt.JobService", "ListJobs").jobs), 0)
        with self.assertRaises(grpc.RpcError) as e:
            call("hpt.JobService", "GetJob", job_id="job-000042")
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_zz_watch_sees_a_worker_stop_serving(self):
        channel = grpc.insecure_channel(f"127.0.0.1:{self.worker_port}")
        stub = health_pb2_grpc.HealthStub(channel)
        seen = []
        first = threading.Event()

        def watch():
            try:
                for r in stub.Watch(health_pb2.HealthCheckRequest(service="hpt.WorkerService"),
                                    timeout=30):
                    seen.append(r.status)
                    first.set()
            except grpc.RpcError:
                pass
            first.set()

        t = threading.Thread(target=watch)
        t.start()
        self.assertTrue(first.wait(10))
        self.worker.send_signal(signal.SIGTERM)
        t.join(30)
        self.assertEqual(seen[0], health_pb2.HealthCheckResponse.SERVING)
        self.assertIn(health_pb2.HealthCheckResponse.NOT_SERVING, seen, seen)


if __name__ == "__main__":
    unittest.main()
