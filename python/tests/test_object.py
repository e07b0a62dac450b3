"""Objects and programs: from a path or bytes, the programs listed, one
picked, and the errors of a bad object or an unknown program."""

from pathlib import Path

import pytest

import sluice

TWO_PROGRAMS = """
#define SEC(n) __attribute__((section(n), used))
SEC("xdp") int first(void *ctx) { return 2; }   /* XDP_PASS */
SEC("xdp") int second(void *ctx) { return 1; }  /* XDP_DROP */
char _license[] SEC("license") = "GPL";
"""

UNCHECKED = """
#define SEC(n) __attribute__((section(n), used))
SEC("xdp") int peek(unsigned int *ctx)
{
    unsigned char *data = (unsigned char *)(long)ctx[0];
    return data[20];   /* no bounds check against data_end */
}
char _license[] SEC("license") = "GPL";
"""


def test_object_from_a_path(bpf):
    obj = sluice.Object(bpf("xdp_count"))
    assert obj.programs == ["xdp_count_prog"]
    assert obj.name == bpf("xdp_count")
    prog = obj.program()
    assert prog.name == "xdp_count_prog"
    assert sluice.Object(Path(bpf("xdp_count"))).programs == ["xdp_count_prog"]


def test_object_from_bytes(bpf):
    data = Path(bpf("xdp_pass")).read_bytes()
    obj = sluice.Object(data, name="pass.o")
    assert obj.name == "pass.o"
    assert obj.programs == ["xdp_pass_prog"]
    assert sluice.Object(bytearray(data)).programs == ["xdp_pass_prog"]
    res = obj.program().run(gen="udp,count=3")
    assert res.verdicts == {"PASS": 3}
    assert res.report["object"] == "pass.o"


def test_one_of_several_programs(compile_c):
    obj = sluice.Object(compile_c(TWO_PROGRAMS, "two"))
    assert obj.programs == ["first", "second"]
    with pytest.raises(sluice.ObjectError, match="several programs, choose one with --prog"):
        obj.program()
    assert obj.program("first").run(gen="udp,count=2").verdicts == {"PASS": 2}
    assert obj.program(name="second").run(gen="udp,count=2").verdicts == {"DROP": 2}


def test_a_malformed_elf_raises_the_engines_message(tmp_path):
    with pytest.raises(sluice.ObjectError) as e:
        sluice.Object(b"\x7fELF" + b"\x00" * 60, name="broken.o")
    assert str(e.value).startswith("broken.o: ")
    with pytest.raises(sluice.ObjectError, match=r"^bad\.o: not an ELF file"):
        sluice.Object(b"not an object", name="bad.o")
    with pytest.raises(sluice.Error, match="No such file"):
        sluice.Object(tmp_path / "missing.o")


def test_an_unknown_program_raises(bpf):
    obj = sluice.Object(bpf("xdp_count"))
    with pytest.raises(sluice.ObjectError) as e:
        obj.program("nope")
    assert str(e.value) == f"{bpf('xdp_count')}: no program `nope`; the object has: xdp_count_prog (xdp)"


def test_a_verifier_rejection_raises_with_its_line(compile_c):
    prog = sluice.Object(compile_c(UNCHECKED, "unchecked")).program()
    with pytest.raises(sluice.VerifierError) as e:
        prog.run(gen="udp,count=1")
    assert isinstance(e.value, sluice.Error)
    assert "unchecked.c" in str(e.value), str(e.value)


def test_the_package_is_typed_and_documented():
    root = Path(sluice.__file__).parent
    assert (root / "_sluice.pyi").exists()
    assert (root / "py.typed").exists()
    for name in sluice.__all__:
        assert getattr(sluice, name).__doc__, name
    assert "exactly one of" in sluice.Program.run.__doc__
