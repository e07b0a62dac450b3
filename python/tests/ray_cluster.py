"""A local two-node Ray cluster for the cluster tests: a head and a
second node started as separate processes with ``ray start --block``
(each with one CPU, ports of its own, one temporary folder), stopped by
signalling the process groups it started (never ``ray stop``, which
stops every Ray on the machine)."""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# `ray start` of the venv the tests run in: its workers import the same
# sluice package.
RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(n):
    """``n`` distinct TCP ports free now (bound at once, then let go)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    """Two Ray nodes on this machine; ``address`` is the head's."""

    def __init__(self, marks, cpus=1, object_store=300 << 20, pin=None):
        # pin: a CPU per node (taskset -c), for the benchmark's single-CPU nodes.
        self.pin = pin or [None, None]
        self.root = Path(tempfile.mkdtemp(prefix="sluice-ray-"))
        self.marks = marks
        self.procs = []
        self.address = None
        # A token of the cluster's own (Ray 2.60's nodes check one, and a
        # local ray.init() leaves one in ~/.ray): every node, the test's
        # driver and the command lines it starts take this one
        # (``token_env``, set in the test process while the cluster runs).
        token = self.root / "auth_token"
        token.write_text(secrets.token_hex(32))
        self.token_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", SLUICE_CLUSTER_MARK_DIR=str(marks), **self.token_env)
        self.env = env
        try:
            gcs, *head_ports = free_ports(7)
            self._start(0, "head", ["--head", f"--port={gcs}", "--include-dashboard=false"], head_ports, cpus, object_store)
            self.address = f"127.0.0.1:{gcs}"
            self._start(1, "node", [f"--address={self.address}"], free_ports(6), cpus, object_store)
            self._wait_nodes(2)
        except BaseException:
            self.stop()
            raise

    def _start(self, k, name, args, ports, cpus, object_store):
        nm, om, agent, agent_grpc, runtime_env, metrics = ports
        workers = ",".join(map(str, free_ports(24)))
        log = open(self.root / f"{name}.log", "wb")
        cmd = [
            RAY, "start", "--block", *args,
            f"--num-cpus={cpus}", "--node-ip-address=127.0.0.1",
            f"--node-manager-port={nm}", f"--object-manager-port={om}",
            f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
            f"--worker-port-list={workers}", f"--object-store-memory={object_store}",
            f"--temp-dir={self.root / 'ray'}", "--disable-usage-stats",
        ]  # fmt: skip
        if self.pin[k] is not None:
            cmd = ["taskset", "-c", str(self.pin[k]), *cmd]
        # A session of its own: the process group holds every process it starts.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + 90
        path = self.root / f"{name}.log"
        while b"Ray runtime started" not in path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start ({name}) failed:\n{path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def _wait_nodes(self, n):
        """Waits until the head sees ``n`` live nodes."""
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
            "print(sum(1 for x in ray.nodes() if x['Alive']))"
        )
        deadline = time.monotonic() + 60
        while True:
            out = subprocess.run(
                [sys.executable, "-c", code, self.address], capture_output=True, text=True, env=self.env
            )
            if out.returncode == 0 and out.stdout.strip() == str(n):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray cluster has not {n} nodes: {out.stdout} {out.stderr[-2000:]}")
            time.sleep(0.5)

    def stop(self):
        """Stops both nodes, the second first: SIGTERM to each ``ray start
        --block`` (it stops what it started), then SIGKILL to what is left
        of its process group; removes the temporary folder."""
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc.pid, signal.SIGKILL)
        self.procs.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
