"""Ctrl-C: a long run (Program.run, Filter.run, Tc.run) stops soon after
SIGINT, well before its natural end, and raises KeyboardInterrupt with
the partial result (stopped) as its `result`; a run after it is whole."""

import os
import signal
import threading
import time

import pytest

import sluice

# A hundred million packets: minutes at least on this machine.
LONG = "udp,count=100000000"


def interrupt_after(seconds):
    """SIGINT to this process in SECONDS, from a timer thread."""
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    return t


def stopped_soon(run):
    """RUN interrupted after half a second: its KeyboardInterrupt, and how long it took."""
    # Python's own SIGINT handler, as in a fresh interpreter: a library
    # loaded by an earlier test (Ray's core worker) may have put its own
    # in its place at the C level.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.monotonic()
    interrupt_after(0.5)
    with pytest.raises(KeyboardInterrupt) as e:
        run()
    return e.value, time.monotonic() - start


def test_a_program_run_stops_on_ctrl_c(bpf):
    prog = sluice.Object(bpf("xdp_count")).program()
    e, took = stopped_soon(lambda: prog.run(gen=LONG, per_packet=False))
    assert took < 10
    res = e.result
    assert isinstance(res, sluice.RunResult)
    assert res.stopped and res.report["stopped"] is True
    assert 0 < res.count < 100_000_000
    assert res.verdicts == {"PASS": res.count}
    # The next run is whole: the stop flag is not left set.
    again = prog.run(gen="udp,count=1000")
    assert again.count == 1000 and not again.stopped


def test_a_threaded_run_stops_on_ctrl_c(bpf):
    prog = sluice.Object(bpf("xdp_count")).program()
    e, took = stopped_soon(lambda: prog.run(gen=LONG, threads=2, per_packet=False))
    assert took < 10
    assert e.result.stopped and e.result.count < 100_000_000


def test_a_filter_run_stops_on_ctrl_c():
    e, took = stopped_soon(lambda: sluice.Filter("udp").run(gen=LONG))
    assert took < 10
    res = e.result
    assert res.stopped and res.report["stopped"] is True
    assert 0 < res.read < 100_000_000 and res.matched == res.read


def test_a_tc_run_stops_on_ctrl_c():
    tc = sluice.Tc(["qdisc add dev v0 clsact", "filter add dev v0 ingress matchall action pass"])
    e, took = stopped_soon(lambda: tc.run(gen=LONG))
    assert took < 10
    res = e.result
    assert res.stopped and 0 < res.count < 100_000_000


def test_a_handler_of_its_own_is_honoured(bpf):
    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop()

    old = signal.signal(signal.SIGINT, handler)
    try:
        interrupt_after(0.3)
        start = time.monotonic()
        with pytest.raises(Stop) as e:
            sluice.Object(bpf("xdp_count")).program().run(gen=LONG, per_packet=False)
        assert time.monotonic() - start < 10
        assert e.value.result.stopped
    finally:
        signal.signal(signal.SIGINT, old)
