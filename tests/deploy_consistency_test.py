#!/usr/bin/python3
"""docker-compose, Kubernetes and the local launcher start the same topology.

For every HpT service, the command line of deploy/docker-compose.yml (with
deploy/hpt.env substituted), of the Kubernetes Deployment or StatefulSet
(with the ConfigMap substituted) and of deploy/launch.py (what ./hpt up starts) must
name the same binary with the same flags and ports; hosts may differ
(0.0.0.0, service names, pod IPs, 127.0.0.1). Also: the ConfigMap holds
hpt.env exactly, Prometheus scrapes every service's metrics port, every
compose service has a health check, and the dashboards use the provisioned
datasource.
"""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

import yaml

DEPLOY = sys.argv.pop(1) if len(sys.argv) > 1 else "deploy"
SERVICES = ["coordinator", "worker-gpu", "worker-reram", "worker-systolic"]
# Flags whose value names a place on the machine (a host, or the data
# root, which the launcher maps to the host folder compose mounts).
HOST_FLAGS = ("--listen=", "--advertise=", "--metrics=", "--http=", "--coordinator=", "--rendezvous_host=",
              "--data_root=", "--state_dir=", "--data_root_hint=")


def read_env():
    env = {}
    for line in open(os.path.join(DEPLOY, "hpt.env")):
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = v
    return env


def read_manifests(folder):
    """Every object of the folder's *.yaml files, in file order."""
    docs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def normalise(argv):
    """Binary base name and flags, with every host replaced by HOST."""
    out = [os.path.basename(argv[0])]
    for a in argv[1:]:
        if a.startswith(HOST_FLAGS):
            flag, value = a.split("=", 1)
            port = value.rsplit(":", 1)[1] if ":" in value else ""
            a = f"{flag}=HOST" + (f":{port}" if port else "")
        out.append(a)
    return out


class DeployConsistencyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = read_env()
        with open(os.path.join(DEPLOY, "docker-compose.yml")) as f:
            cls.compose = yaml.safe_load(f)
        cls.k8s = read_manifests(os.path.join(DEPLOY, "k8s"))
        out = subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "launch.py"), "commands",
                              "--bin_dir=/bin"], check=True, capture_output=True, text=True)
        cls.launcher = json.loads(out.stdout)

    def compose_command(self, service):
        def sub(m):
            self.assertIn(m.group(1), self.env, f"compose uses ${{{m.group(1)}}}")
            return self.env[m.group(1)]
        return [re.sub(r"\$\{([A-Z0-9_]+)\}", sub, str(a))
                for a in self.compose["services"][service]["command"]]

    def workload(self, service, docs=None):
        """The Deployment or StatefulSet that runs `service`."""
        return next(d for d in (docs or self.k8s) if d["kind"] in ("Deployment", "StatefulSet")
                    and d["metadata"]["name"] == service)

    def k8s_command(self, service, docs=None):
        config = next(d for d in self.k8s if d["kind"] == "ConfigMap")["data"]
        container = self.workload(service, docs)["spec"]["template"]["spec"]["containers"][0]
        # A pod's own name and namespace, as the downward API gives them.
        values = dict(config, POD_IP="10.0.0.1", POD_NAME=service, POD_NAMESPACE="hpt")
        return [re.sub(r"\$\(([A-Z0-9_]+)\)", lambda m: values[m.group(1)], a)
                for a in container["command"]]

    def test_workers_have_stable_names_and_requests(self):
        for service in SERVICES:
            with self.subTest(service=service):
                workload = self.workload(service)
                labels = workload["spec"]["template"]["metadata"]["labels"]
                self.assertEqual(labels["app.kubernetes.io/name"], "hpt")
                self.assertEqual(labels["app.kubernetes.io/component"], service)
                container = workload["spec"]["template"]["spec"]["containers"][0]
                self.assertIn("requests", container["resources"])
                if service == "coordinator":
                    continue
                # A StatefulSet behind a headless Service: each worker has a
                # DNS name of its own, which it advertises and a server
                # certificate can name (*.worker-gpu.NAMESPACE.svc).
                self.assertEqual(workload["kind"], "StatefulSet")
                self.assertEqual(workload["spec"]["serviceName"], service)
                headless = next(d for d in self.k8s if d["kind"] == "Service"
                                and d["metadata"]["name"] == service)
                self.assertEqual(headless["spec"]["clusterIP"], "None")
                advertise = [a for a in self.k8s_command(service) if a.startswith("--advertise=")]
                self.assertEqual(len(advertise), 1)
                self.assertTrue(advertise[0].startswith(
                    f"--advertise={service}.{service}.hpt.svc:"), advertise)
                limits = container["resources"].get("limits", {})
                self.assertEqual(limits.get("nvidia.com/gpu"),
                                 1 if service == "worker-gpu" else None)
        coordinator = next(d for d in self.k8s if d["kind"] == "Service"
                           and d["metadata"]["name"] == "coordinator")
        # Plaintext without tokens: never exposed beyond the cluster.
        self.assertEqual(coordinator["spec"]["type"], "ClusterIP")

    def test_k8s_secure_set_is_the_compose_secure_mode(self):
        stale = subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "k8s_secure.py"),
                                "--check"], capture_output=True, text=True)
        self.assertEqual(stale.returncode, 0, stale.stderr)
        secure_docs = read_manifests(os.path.join(DEPLOY, "k8s", "secure"))
        with open(os.path.join(DEPLOY, "docker-compose.secure.yml")) as f:
            compose = yaml.safe_load(f)["services"]
        for service in SERVICES:
            with self.subTest(service=service):
                # Both wrap the plain command in with-tls ...
                command = self.k8s_command(service, secure_docs)
                self.assertEqual(os.path.basename(compose[service]["entrypoint"][0]), command[0])
                self.assertEqual(command[1:], self.k8s_command(service))
                # ... on this service's own role folder at /tls, and no other.
                pod = self.workload(service, secure_docs)["spec"]["template"]["spec"]
                mounts = [m for m in pod["containers"][0]["volumeMounts"]
                          if m["mountPath"] == "/tls"]
                self.assertEqual(len(mounts), 1)
                self.assertTrue(mounts[0]["readOnly"])
                volume = next(v for v in pod["volumes"] if v["name"] == mounts[0]["name"])
                self.assertEqual(volume["secret"]["secretName"], f"hpt-tls-{service}")
                self.assertEqual(compose[service]["volumes"], [f"./tls/{service}:/tls:ro"])
                # A gRPC probe cannot speak TLS: hptctl health through with-tls.
                probe = pod["containers"][0]["readinessProbe"]
                self.assertNotIn("grpc", probe)
                self.assertEqual(probe["exec"]["command"][:2], ["with-tls", "hptctl"])

    def test_every_service_runs_the_same_command_everywhere(self):
        for service in SERVICES:
            with self.subTest(service=service):
                compose = normalise(self.compose_command(service))
                self.assertEqual(normalise(self.launcher[service]), compose)
                self.assertEqual(normalise(self.k8s_command(service)), compose)

    def test_secure_mode_adds_tls_everywhere_and_tokens_on_the_coordinator(self):
        out = subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "launch.py"), "commands",
                              "--bin_dir=/bin", "--secure", "--dir=/run/x"],
                             check=True, capture_output=True, text=True)
        secure = json.loads(out.stdout)
        self.assertEqual(sorted(secure), sorted(self.launcher))
        for name, argv in secure.items():
            plain = self.launcher[name]
            self.assertEqual(argv[:len(plain)], plain, name)
            extra = argv[len(plain):]
            # Each process its own role's certificate (deploy/make-certs).
            role = "/run/x/tls/" + name
            self.assertIn(f"--tls_cert={role}/cert.pem", extra, name)
            self.assertIn(f"--tls_key={role}/key.pem", extra, name)
            self.assertIn(f"--tls_ca={role}/ca.pem", extra, name)
            self.assertEqual(f"--tokens_file={role}/tokens" in extra, name == "coordinator")

    def test_compose_secure_mode_adds_the_launchers_secure_flags(self):
        with open(os.path.join(DEPLOY, "docker-compose.secure.yml")) as f:
            secure = yaml.safe_load(f)
        self.assertEqual(sorted(secure["services"]), sorted(SERVICES))
        out = subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "launch.py"), "commands",
                              "--bin_dir=/bin", "--secure", "--dir=/run/x"],
                             check=True, capture_output=True, text=True)
        launcher = json.loads(out.stdout)
        for service in SERVICES:
            with self.subTest(service=service):
                svc = secure["services"][service]
                self.assertEqual(svc["entrypoint"], ["/usr/local/bin/with-tls"])
                # Its own role's folder only: no process holds another's key.
                self.assertEqual([f"./tls/{service}:/tls:ro"], svc["volumes"])
                # What deploy/with-tls runs, with printf in front of the command:
                # one argument a line (an argument may hold spaces).
                command = self.compose_command(service)
                ran = subprocess.run([os.path.join(DEPLOY, "with-tls"), "printf", "%s\\n"]
                                     + command,
                                     env={"HPT_TLS_DIR": f"/run/x/tls/{service}",
                                          "PATH": "/usr/bin:/bin"},
                                     check=True, capture_output=True, text=True)
                added = ran.stdout.splitlines()[len(command):]
                plain = self.launcher[service]
                self.assertEqual(added, launcher[service][len(plain):])
        # The image carries the wrapper in /usr/local/bin.
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            dockerfile = f.read()
        self.assertIn("deploy/with-tls /out/", dockerfile)
        self.assertIn("COPY --from=builder /out/ /usr/local/bin/", dockerfile)

    def test_the_environment_wins_over_the_env_file_and_set_over_both(self):
        def commands(env, *extra):
            out = subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "launch.py"),
                                  "commands", "--bin_dir=/bin", *extra],
                                 check=True, capture_output=True, text=True,
                                 env=dict(os.environ, **env))
            return json.loads(out.stdout)
        from_env = commands({"HPT_SYSTOLIC_ROWS": "64", "HPT_DATA_DIR": "/my/data"})
        self.assertIn("--systolic_rows=64", from_env["worker-systolic"])
        self.assertIn("--data_root=/my/data", from_env["coordinator"])
        from_set = commands({"HPT_SYSTOLIC_ROWS": "64"}, "--set", "HPT_SYSTOLIC_ROWS=32")
        self.assertIn("--systolic_rows=32", from_set["worker-systolic"])
        hint = [a for a in from_env["coordinator"] if a.startswith("--data_root_hint=")]
        self.assertEqual(len(hint), 1)
        self.assertIn("HPT_DATA_DIR", hint[0])

    def test_more_workers_of_a_kind_get_names_and_ports_of_their_own(self):
        def commands(env):
            return subprocess.run(["/usr/bin/python3", os.path.join(DEPLOY, "launch.py"),
                                   "commands", "--bin_dir=/bin"], capture_output=True, text=True,
                                  env=dict(os.environ, **env))
        run = commands({"HPT_GPU_WORKERS": "3", "HPT_RERAM_WORKERS": "2"})
        self.assertEqual(run.returncode, 0, run.stderr)
        plan = json.loads(run.stdout)
        self.assertEqual(sorted(plan), sorted(SERVICES + ["worker-gpu-2", "worker-gpu-3",
                                                          "worker-reram-2"]))
        grpc, metrics = int(self.env["HPT_GPU_GRPC_PORT"]), int(self.env["HPT_GPU_METRICS_PORT"])
        third = plan["worker-gpu-3"]
        self.assertIn("--name=worker-gpu-3", third)
        self.assertIn(f"--listen=127.0.0.1:{grpc + 200}", third)
        self.assertIn(f"--advertise=127.0.0.1:{grpc + 200}", third)
        self.assertIn(f"--metrics=127.0.0.1:{metrics + 200}", third)
        # Otherwise the first one's command line.
        strip = lambda argv: [a for a in argv if not a.startswith(("--name=", "--listen=",
                                                                   "--advertise=", "--metrics="))]
        self.assertEqual(strip(third), strip(plan["worker-gpu"]))
        run = commands({"HPT_GPU_WORKERS": "many"})
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("HPT_GPU_WORKERS='many': give a whole number of workers from 1 to 16",
                      run.stderr)

    def test_ports_are_the_env_files(self):
        prefixes = {"coordinator": "HPT_COORDINATOR", "worker-gpu": "HPT_GPU",
                    "worker-reram": "HPT_RERAM", "worker-systolic": "HPT_SYSTOLIC"}
        for service, prefix in prefixes.items():
            argv = self.launcher[service]
            self.assertIn(f"--listen=127.0.0.1:{self.env[prefix + '_GRPC_PORT']}", argv)
            self.assertIn(f"--metrics=127.0.0.1:{self.env[prefix + '_METRICS_PORT']}", argv)
            deployment = self.workload(service)
            annotations = deployment["spec"]["template"]["metadata"]["annotations"]
            self.assertEqual(annotations["prometheus.io/scrape"], "true")
            self.assertEqual(annotations["prometheus.io/port"], self.env[prefix + "_METRICS_PORT"])
            service_ports = next(d for d in self.k8s if d["kind"] == "Service"
                                 and d["metadata"]["name"] == service)["spec"]["ports"]
            # The coordinator's live pages have a port of their own.
            pages = [self.env[prefix + "_HTTP_PORT"]] if prefix + "_HTTP_PORT" in self.env else []
            self.assertEqual(sorted(str(p["port"]) for p in service_ports),
                             sorted([self.env[prefix + "_GRPC_PORT"],
                                     self.env[prefix + "_METRICS_PORT"]] + pages))

    def test_configmap_holds_the_env_file(self):
        config = next(d for d in self.k8s if d["kind"] == "ConfigMap")["data"]
        self.assertEqual(config, self.env)

    def test_prometheus_scrapes_every_service(self):
        with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
            scrape = yaml.safe_load(f)["scrape_configs"]
        ports = {"coordinator": "HPT_COORDINATOR_METRICS_PORT",
                 "worker-gpu": "HPT_GPU_METRICS_PORT", "worker-reram": "HPT_RERAM_METRICS_PORT",
                 "worker-systolic": "HPT_SYSTOLIC_METRICS_PORT"}
        targets = {j["job_name"]: j["static_configs"][0]["targets"] for j in scrape}
        self.assertEqual(targets, {s: [f"{s}:{self.env[p]}"] for s, p in ports.items()})

    def test_every_compose_service_has_a_health_check(self):
        self.assertEqual(set(self.compose["services"]),
                         set(SERVICES) | {"prometheus", "grafana"})
        for name, service in self.compose["services"].items():
            self.assertIn("healthcheck", service, name)

    def test_dashboards_use_the_provisioned_datasource(self):
        with open(os.path.join(DEPLOY, "grafana/provisioning/datasources/prometheus.yml")) as f:
            uid = yaml.safe_load(f)["datasources"][0]["uid"]
        dashboards = glob.glob(os.path.join(DEPLOY, "grafana/dashboards/*.json"))
        self.assertEqual(len(dashboards), 3)
        for path in dashboards:
            for panel in json.load(open(path))["panels"]:
                self.assertEqual(panel["datasource"]["uid"], uid, path)


if __name__ == "__main__":
    unittest.main()
