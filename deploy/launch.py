#!/usr/bin/python3
"""The local launcher: the docker-compose topology on loopback, no Docker.

Reads deploy/hpt.env and deploy/docker-compose.yml, and starts every HpT
service of the compose file with its compose command line (0.0.0.0 and the
service host names become 127.0.0.1, the image's binaries become the Bazel
ones), plus Prometheus when it is installed, scraping what
deploy/prometheus.yml scrapes. Logs, pids and Prometheus' data go under one
folder.

  deploy/launch.py up [--detach] [--dir DIR] [--set KEY=VALUE ...]
  deploy/launch.py down [--dir DIR]
  deploy/launch.py commands [--set KEY=VALUE ...]   # what `up` would start, as JSON

HPT_GPU_WORKERS=N (and HPT_RERAM_WORKERS, HPT_SYSTOLIC_WORKERS) in the
environment starts N workers of that kind (default 1): worker-gpu-2 and on
listen on the first one's ports plus 100 each, and Prometheus scrapes them
all.

`./hpt up` and `./hpt down` call it. Without --detach `up` stays in the
foreground and stops everything on Ctrl-C.

--secure: makes a CA, one certificate per role (deploy/make-certs: the
coordinator, each worker kind, a client) and a bearer token for the user
under DIR/tls, starts every process with its role's
--tls_cert/--tls_key/--tls_ca (mutual TLS between coordinator and workers)
and the coordinator with --tokens_file, and prints the hptctl flags to use.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import yaml

DEPLOY = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DEPLOY)
BINARIES = {"hpt_coordinator": "coordinator/hpt_coordinator",
            "hpt_worker": "workers/main/hpt_worker"}
# Start order; Prometheus last.
HPT_SERVICES = ["coordinator", "worker-gpu", "worker-reram", "worker-systolic"]
# Workers of a kind beyond the first (the launcher's own setting, from the
# environment: HPT_GPU_WORKERS=2 ./hpt up): worker-gpu-2, ... on the first
# one's ports plus 100 each.
WORKER_COUNTS = {"worker-gpu": "HPT_GPU_WORKERS", "worker-reram": "HPT_RERAM_WORKERS",
                 "worker-systolic": "HPT_SYSTOLIC_WORKERS"}
EXTRA_PORT_STEP = 100


def worker_count(service):
    """How many workers of the service's kind to start (default 1)."""
    name = WORKER_COUNTS[service]
    text = os.environ.get(name, "1")
    if not text.isdigit() or not 1 <= int(text) <= 16:
        sys.exit(f"{name}={text!r}: give a whole number of workers from 1 to 16")
    return int(text)


def extra_workers(name, argv):
    """Copies of a worker's command line for workers 2..N of its kind, each
    with its own name and ports: {service name: argv}."""
    out = {}
    for k in range(2, worker_count(name) + 1):
        copy_name = f"{name}-{k}"
        copy = []
        for arg in argv:
            m = re.match(r"^(--(?:listen|advertise|metrics)=[^:]*:)(\d+)$", arg)
            if m:
                arg = m.group(1) + str(int(m.group(2)) + EXTRA_PORT_STEP * (k - 1))
            elif arg == f"--name={name}":
                arg = f"--name={copy_name}"
            copy.append(arg)
        out[copy_name] = copy
    return out


def read_env(path, overrides=()):
    env = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                sys.exit(f"{path}:{n}: expected KEY=VALUE, got {line!r}")
            key, value = line.split("=", 1)
            env[key.strip()] = value.strip()
    # As compose does: a variable set in the environment wins over the file
    # (HPT_DATA_DIR=/my/data ./hpt up), and --set over both.
    for key in env:
        if key in os.environ:
            env[key] = os.environ[key]
    for item in overrides:
        key, _, value = item.partition("=")
        if key not in env:
            sys.exit(f"--set {key}: not a key of {path}")
        env[key] = value
    return env


def interpolate(text, env):
    def sub(m):
        key = m.group(1)
        if key not in env:
            sys.exit(f"docker-compose.yml uses ${{{key}}}, which deploy/hpt.env lacks")
        return env[key]
    return re.sub(r"\$\{([A-Z0-9_]+)\}", sub, text)


def compose_services(env):
    with open(os.path.join(DEPLOY, "docker-compose.yml")) as f:
        compose = yaml.safe_load(f)
    return {name: [interpolate(str(a), env) for a in svc.get("command", [])]
            for name, svc in compose["services"].items()}


def local_command(argv, bin_dir, env=None, run_dir=None):
    """A compose command line as the launcher runs it on loopback (the data
    root is the host folder compose would mount there)."""
    hosts = "|".join(re.escape(s) for s in HPT_SERVICES)
    out = []
    for i, arg in enumerate(argv):
        if i == 0:
            out.append(os.path.join(bin_dir, BINARIES[arg]))
            continue
        arg = arg.replace("0.0.0.0", "127.0.0.1")
        # host:port of a service, and the coordinator's rendezvous host.
        arg = re.sub(r"=(%s):" % hosts, "=127.0.0.1:", arg)
        arg = re.sub(r"^--rendezvous_host=(%s)$" % hosts, "--rendezvous_host=127.0.0.1", arg)
        if env and arg.startswith("--data_root="):
            arg = "--data_root=" + os.path.normpath(os.path.join(DEPLOY, env["HPT_DATA_DIR"]))
        if arg.startswith("--data_root_hint="):
            arg = ("--data_root_hint=to read it, run ./hpt down, then ./hpt up with "
                   "HPT_DATA_DIR=its folder in the environment (or in deploy/hpt.env)")
        if arg.startswith("--state_dir="):
            arg = "--state_dir=" + os.path.join(run_dir or os.path.join(ROOT, "build-out"),
                                                "state")
        out.append(arg)
    return out


def plan(env, bin_dir, run_dir=None, tls_dir=None):
    """Each service's command line; with tls_dir, with the secure mode's flags."""
    services = compose_services(env)
    commands = {}
    for name in HPT_SERVICES:
        commands[name] = local_command(services[name], bin_dir, env, run_dir)
        if name in WORKER_COUNTS:
            commands.update(extra_workers(name, commands[name]))
    if tls_dir:
        for name, argv in commands.items():
            role = f"{tls_dir}/{role_folder(name)}"
            argv += [f"--tls_cert={role}/cert.pem", f"--tls_key={role}/key.pem",
                     f"--tls_ca={role}/ca.pem"]
            if name == "coordinator":
                argv.append(f"--tokens_file={role}/tokens")
    return commands


def role_folder(name):
    """The make-certs folder of a service's role: worker-gpu-2 is a
    worker-gpu."""
    for base in WORKER_COUNTS:
        if name == base or name.startswith(base + "-"):
            return base
    return name


def make_pki(tls_dir):
    """The CA and one certificate per role (deploy/make-certs), each server's
    naming 127.0.0.1, localhost and every compose service name; the
    coordinator's tokens file with an admin token for this user, and that
    token in DIR/token (all kept when they exist)."""
    done = subprocess.run([os.path.join(DEPLOY, "make-certs"), tls_dir] + HPT_SERVICES,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"hpt: {done.stderr.strip()}")
    tokens_path = os.path.join(tls_dir, "coordinator", "tokens")
    token_path = os.path.join(tls_dir, "token")
    if not os.path.exists(tokens_path) or not os.path.exists(token_path):
        token = os.urandom(24).hex()
        user = os.environ.get("USER") or "admin"
        fd = os.open(tokens_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"# TOKEN USER [admin]; add a line per user\n{token} {user} admin\n")
        fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")


def prometheus_config(env, scrape_interval):
    with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
        config = yaml.safe_load(f)
    ports = {"coordinator": env["HPT_COORDINATOR_METRICS_PORT"],
             "worker-gpu": env["HPT_GPU_METRICS_PORT"],
             "worker-reram": env["HPT_RERAM_METRICS_PORT"],
             "worker-systolic": env["HPT_SYSTOLIC_METRICS_PORT"]}
    for job in config["scrape_configs"]:
        name = job["job_name"]
        count = worker_count(name) if name in WORKER_COUNTS else 1
        job["static_configs"] = [{"targets": [
            f"127.0.0.1:{int(ports[name]) + EXTRA_PORT_STEP * k}" for k in range(count)]}]
    if scrape_interval:
        config["global"]["scrape_interval"] = scrape_interval
        config["global"]["evaluation_interval"] = scrape_interval
    return config


def wait_tcp(port, proc, name, log, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}; see {log}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", int(port))) == 0:
                return
        time.sleep(0.1)
    sys.exit(f"{name} did not open port {port} in {timeout}s; see {log}")


def port_of(argv, flag):
    for a in argv:
        if a.startswith(f"--{flag}="):
            return a.rsplit(":", 1)[1]
    return None


def read_pids(pid_file):
    try:
        with open(pid_file) as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def down(run_dir, quiet=False, own=None):
    """Stops the processes pids.json names; `own`: a launcher's own {name: pid},
    stopped whatever pids.json holds now, which is removed only while it
    still names them (a later `up` may have written its own)."""
    pid_file = os.path.join(run_dir, "pids.json")
    pids = own if own is not None else read_pids(pid_file)
    if pids is None:
        if not quiet:
            print(f"hpt: nothing running (no {pid_file})")
        return
    for name, pid in reversed(list(pids.items())):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 10
    for name, pid in pids.items():
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if own is None or read_pids(pid_file) == own:
        try:
            os.remove(pid_file)
        except FileNotFoundError:
            pass
    if not quiet:
        print(f"hpt: stopped {', '.join(pids)}")


def up(args, env):
    run_dir = os.path.abspath(args.dir)
    down(run_dir, quiet=True)
    os.makedirs(run_dir, exist_ok=True)
    tls_dir = os.path.join(run_dir, "tls") if args.secure else None
    if tls_dir:
        make_pki(tls_dir)
    commands = plan(env, args.bin_dir, run_dir, tls_dir)
    pids = {}
    procs = []

    def record(name, proc):
        pids[name] = proc.pid
        procs.append(proc)
        with open(os.path.join(run_dir, "pids.json"), "w") as f:
            json.dump(pids, f)

    rows = []
    try:
        for name, argv in commands.items():
            log = os.path.join(run_dir, f"{name}.log")
            proc = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                    start_new_session=True)
            record(name, proc)
            grpc, metrics = port_of(argv, "listen"), port_of(argv, "metrics")
            wait_tcp(grpc, proc, name, log)
            wait_tcp(metrics, proc, name, log)
            rows.append((name, f"127.0.0.1:{grpc}", f"http://127.0.0.1:{metrics}/metrics", log))
            if port_of(argv, "http"):
                scheme = "https" if tls_dir else "http"
                rows.append((name + " pages", "-", f"{scheme}://127.0.0.1:{port_of(argv, 'http')}/", log))
        prometheus = shutil.which("prometheus")
        if prometheus and not args.no_prometheus:
            config_path = os.path.join(run_dir, "prometheus.yml")
            with open(config_path, "w") as f:
                yaml.safe_dump(prometheus_config(env, args.scrape_interval), f)
            port = env["HPT_PROMETHEUS_PORT"]
            log = os.path.join(run_dir, "prometheus.log")
            proc = subprocess.Popen(
                [prometheus, f"--config.file={config_path}",
                 f"--storage.tsdb.path={os.path.join(run_dir, 'prometheus-data')}",
                 f"--web.listen-address=127.0.0.1:{port}"],
                stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
            record("prometheus", proc)
            wait_tcp(port, proc, "prometheus", log)
            rows.append(("prometheus", "-", f"http://127.0.0.1:{port}/graph", log))
        elif not args.no_prometheus:
            rows.append(("prometheus", "-", "not installed (apt-get install prometheus)", "-"))
    except SystemExit:
        down(run_dir, quiet=True)
        raise
    width = max(len(r[0]) for r in rows)
    print(f"{'service':<{width}}  {'gRPC':<16}  metrics / UI")
    for name, grpc, metrics, log in rows:
        print(f"{name:<{width}}  {grpc:<16}  {metrics}")
    print(f"logs and pids in {run_dir}; Grafana runs only under docker compose")
    coordinator_port = port_of(commands['coordinator'], 'listen')
    if tls_dir:
        print(f"secure mode: hptctl --tls_ca={tls_dir}/ca.pem --token_file={tls_dir}/token "
              f"--coordinator=localhost:{coordinator_port} list")
    elif str(coordinator_port) != "50051":
        # hptctl's default is 50051: say how to reach another port.
        print(f"hptctl: export HPT_COORDINATOR=127.0.0.1:{coordinator_port} "
              f"(or --coordinator=127.0.0.1:{coordinator_port})")
    sys.stdout.flush()
    if args.detach:
        return
    print("hpt: running; Ctrl-C stops everything")
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not stop["now"]:
        for name, proc in zip(pids, procs):
            if proc.poll() is not None:
                print(f"hpt: {name} exited with {proc.returncode}; stopping the rest")
                stop["now"] = True
        time.sleep(0.5)
    # Only what this launcher started: after `./hpt down`, a new `up` may
    # already own the run directory.
    down(run_dir, own=pids)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["up", "down", "commands", "pki"])
    parser.add_argument("--dir", default=os.path.join(ROOT, "build-out", "up"))
    parser.add_argument("--bin_dir", default=os.path.join(ROOT, "bazel-bin"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a deploy/hpt.env value")
    parser.add_argument("--detach", "-d", action="store_true")
    parser.add_argument("--no_prometheus", action="store_true")
    parser.add_argument("--secure", action="store_true",
                        help="TLS with certificates made here, and bearer tokens")
    parser.add_argument("--scrape_interval", default="",
                        help="override prometheus.yml's scrape interval (e.g. 1s)")
    args = parser.parse_args()
    env = read_env(os.path.join(DEPLOY, "hpt.env"), args.set)
    if args.command == "pki":
        make_pki(os.path.abspath(args.dir))
        print(f"certificates and token in {os.path.abspath(args.dir)}")
    elif args.command == "down":
        down(os.path.abspath(args.dir))
    elif args.command == "commands":
        print(json.dumps(plan(env, args.bin_dir,
                              tls_dir=os.path.join(os.path.abspath(args.dir), "tls")
                              if args.secure else None), indent=1))
    else:
        up(args, env)


if __name__ == "__main__":
    main()
