"""spectui starts, lists and stops the real SGLang 0.5.23 server on this CPU, and says why real launches fail."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("real_server")


def test_a_profile_starts_the_real_server_and_lists_it_ready(real_server):
    started = real_server.started["server"]
    assert started["state"] == "ready" and started["origin"] == "spectui"
    assert started["gpus"] == [] and started["port"] == real_server.started["port"]
    assert started["argv"][0] == real_server.python  # the server runs under the host's --python
    listed = {s["name"]: s for s in real_server.cli_json("servers", "list")["servers"]}
    assert listed["real-cpu"]["state"] == "ready" and listed["real-cpu"]["pid"] == started["pid"]
