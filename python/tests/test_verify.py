"""Program.verify(): the verdict, where and why, the source line, against
`sluice verify --json`; settings the verifier sees (--set); the kernel's
verdict beside it; running a rejected program raises VerifierError with
the same fields."""

import json
import os
import subprocess

import pytest

import sluice

UNCHECKED = """
#define SEC(n) __attribute__((section(n), used))
SEC("xdp") int peek(unsigned int *ctx)
{
    unsigned char *data = (unsigned char *)(long)ctx[0];
    return data[20];   /* no bounds check against data_end */
}
char _license[] SEC("license") = "GPL";
"""

# Unchecked only when the global `check` is set: the verifier knows
# .rodata's values, and skips the branch it cannot take.
GUARDED = """
#define SEC(n) __attribute__((section(n), used))
volatile const unsigned int check = 0;
SEC("xdp") int guarded(unsigned int *ctx)
{
    unsigned char *data = (unsigned char *)(long)ctx[0];
    if (check)
        return data[20];
    return 2;
}
char _license[] SEC("license") = "GPL";
"""


def cli_verify(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "verify", *args, "--json"], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["programs"][0]


def cli_run_error(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "run", *args], capture_output=True, text=True)
    assert out.returncode != 0
    assert out.stderr.startswith("sluice: "), out.stderr
    return out.stderr[len("sluice: "):].rstrip("\n")


def test_a_rejected_program_says_where_and_why(compile_c, sluice_bin):
    path = compile_c(UNCHECKED, "unchecked")
    res = sluice.Object(path).program().verify(kernel=False)
    assert not res.accepted
    assert res.verdict == "reject"
    assert res.program == "peek"
    assert res.line is not None and res.line.endswith("unchecked.c:6")
    assert res.source == "return data[20];   /* no bounds check against data_end */"
    assert res.insn is not None and res.disasm
    assert res.explanation and res.kernel_message and res.rule
    assert res.kernel is None and res.agrees is None
    assert res.insns_processed > 0 and res.log == []
    cli = cli_verify(sluice_bin, path, "--no-kernel")
    mine = res.report
    for k in ("micros",):
        cli.pop(k), mine.pop(k)
    assert mine == cli
    assert (res.insn, res.line, res.explanation, res.rule) == (cli["insn"], cli["line"], cli["reason"], cli["rule"])
    assert "reject at insn" in repr(res) and "unchecked.c:6" in repr(res)
    assert sluice.Object(path).program().verify(kernel=False, log=True).log


def test_an_accepted_program_and_its_figures(bpf, sluice_bin):
    res = sluice.Object(bpf("xdp_count")).program().verify(kernel=False)
    assert res.accepted and res.verdict == "accept"
    assert res.insn is None and res.line is None and res.explanation is None and res.rule is None
    cli = cli_verify(sluice_bin, bpf("xdp_count"), "--no-kernel")
    assert (res.insns_processed, res.states, res.stack_depth) == (
        cli["insns_processed"], cli["states"], cli["stack_depth"])


def test_settings_are_what_the_verifier_sees(compile_c, sluice_bin):
    path = compile_c(GUARDED, "guarded")
    obj = sluice.Object(path)
    assert obj.program().verify(kernel=False).accepted
    res = obj.program(set={"check": 1}).verify(kernel=False)
    assert res.verdict == "reject" and res.line.endswith("guarded.c:8")
    cli = cli_verify(sluice_bin, path, "--no-kernel", "--set", "check=1")
    assert (res.insn, res.line) == (cli["insn"], cli["line"])
    assert obj.program().run(gen="udp,count=2").verdicts == {"PASS": 2}


def test_running_a_rejected_program_raises_verifier_error(compile_c, sluice_bin):
    path = compile_c(UNCHECKED, "unchecked")
    prog = sluice.Object(path).program()
    with pytest.raises(sluice.VerifierError) as e:
        prog.run(gen="udp,count=1")
    err = e.value
    assert isinstance(err, sluice.Error)
    res = prog.verify(kernel=False)
    assert (err.program, err.insn, err.line, err.explanation) == (res.program, res.insn, res.line, res.explanation)
    assert err.kernel_message
    assert str(err) == cli_run_error(sluice_bin, path, "--gen", "udp,count=1")


def kernel_or_skip():
    """Skips loudly without root, unless SLUICE_REQUIRE_KERNEL=1 (CI), where that fails."""
    if os.geteuid() != 0:
        if os.environ.get("SLUICE_REQUIRE_KERNEL") == "1":
            pytest.fail("SLUICE_REQUIRE_KERNEL=1 but not root: the kernel's verdict needs root")
        pytest.skip("SKIPPED: the kernel's verdict needs root")


def test_the_kernels_verdict_beside(compile_c, bpf, sluice_bin):
    kernel_or_skip()
    path = compile_c(UNCHECKED, "unchecked")
    res = sluice.Object(path).program().verify(kernel=True)
    cli = cli_verify(sluice_bin, path)
    assert "kernel" in cli, f"the CLI did not ask the kernel: {cli}"
    assert res.kernel["verdict"] == cli["kernel"]["verdict"] == "reject"
    assert res.agrees is True
    ok = sluice.Object(bpf("xdp_count")).program().verify()
    assert ok.kernel is not None and ok.kernel["verdict"] == "accept", ok.kernel
    assert ok.agrees is True and ok.kernel["insns_processed"] > 0
