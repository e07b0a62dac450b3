"""The notebook examples/notebooks/ddos.ipynb, executed headless with nbclient
(a kernel of this venv's Python, which has the sluice package): it runs, its
printed counts equal `sluice run --json` on the same capture, its figures are
PNG images; and it is stored without outputs."""

import base64
import json
import os
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO

NOTEBOOK = REPO / "examples" / "notebooks" / "ddos.ipynb"


def printed(nb):
    """Everything the notebook's cells printed, one string."""
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "stream" and out.name == "stdout"
    )


def value(text, label):
    """What the line `LABEL: VALUE` printed."""
    m = re.search(rf"^{re.escape(label)}: (.*)$", text, re.M)
    assert m, f"no line `{label}: ...` in the notebook's output:\n{text}"
    return m.group(1)


def test_the_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    assert all(c.outputs == [] and c.execution_count is None for c in code)


@pytest.fixture(scope="module")
def executed(bpf, sluice_bin, tmp_path_factory, monkeypatch_module):
    """The notebook executed in a fresh kernel, its capture written in a temporary folder."""
    workdir = tmp_path_factory.mktemp("notebook")
    capture = workdir / "ddos.pcap"
    monkeypatch_module.setenv("SLUICE_BIN", sluice_bin)
    monkeypatch_module.setenv("SLUICE_BPF_DIR", os.path.dirname(bpf("xdp_ddos")))
    monkeypatch_module.setenv("DDOS_PCAP", str(capture))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # One more cell, not stored: which interpreter ran the notebook.
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint('kernel:', sys.executable)"))
    # "python3" is ipykernel's own kernel: jupyter_client starts it with this
    # interpreter (sys.executable), the venv's.
    client = NotebookClient(
        nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    return nb, capture


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_notebook_runs_in_this_interpreter(executed):
    nb, _ = executed
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    assert os.path.abspath(value(printed(nb), "kernel")) == os.path.abspath(sys.executable)


def test_its_counts_are_the_clis(executed, bpf, sluice_bin):
    nb, capture = executed
    text = printed(nb)
    cli = json.loads(
        subprocess.run(
            [
                sluice_bin, "run", bpf("xdp_ddos"), "--pcap", str(capture), "--threads", "1", "--json",
                "--map-update", "blocklist_v4", "10.66.0.0/16", "0",
                "--map-update", "protected_ports", "53", "1",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert cli["packets"] == 100_000
    assert int(value(text, "packets")) == cli["packets"]
    assert json.loads(value(text, "verdicts")) == cli["verdicts"]
    assert cli["verdicts"]["DROP"] > 0 and cli["verdicts"]["PASS"] > 0
    # The per-source drops add up to the report's.
    assert int(value(text, "dropped packets")) == cli["verdicts"]["DROP"]
    # 200 + 20 + 1 + 50 sources; the one at 25,000 packets/s is over its rate.
    assert int(value(text, "sources")) == 271
    # The 20 blocked sources drop all they send, the fast one its excess.
    assert int(value(text, "sources with drops")) >= 21
    assert int(value(text, "blocked prefixes")) == 1
    stats = next(m for m in cli["maps"] if m["name"] == "drop_stats")
    for entry in stats["entries"]:
        assert value(text, f"drop_stats[{entry['key']}]") == entry["value"]
    assert json.loads(value(text, "instructions per packet")) == cli["insns_per_packet"]


def test_its_figures_are_images(executed):
    nb, _ = executed
    images = [
        o
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.output_type == "display_data" and "image/png" in o.get("data", {})
    ]
    assert len(images) == 2
    for img in images:
        assert base64.b64decode(img["data"]["image/png"]).startswith(b"\x89PNG\r\n\x1a\n")
