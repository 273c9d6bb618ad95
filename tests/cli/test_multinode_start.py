"""A multi-node profile is refused by `spectui servers switch|start` in one sentence that names its nodes and
how to launch it, and nothing is started."""

from __future__ import annotations

import json

from spectui.cli.main import main


def test_a_multi_node_profile_is_not_started_as_one_server(state_dir, capsys):
    host = ["--demo", "--state-dir", str(state_dir)]
    for action in ("switch", "start"):
        assert main(["servers", action, "twonode-kimi-eagle3", *host]) == 1
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err == ("spectui: twonode-kimi-eagle3 runs on 2 nodes (gpu-node-0, gpu-node-1); this starts "
                       "single-host servers only: `spectui servers start twonode-kimi-eagle3 --host gpu-node-0` "
                       "starts every node at once, a console on its nodes (`spectui connect gpu-node-0 gpu-node-1`) "
                       "switches to it, or launch it with `spectui profiles render twonode-kimi-eagle3 "
                       "--for slurm|lws|shell`")
    assert main(["servers", "list", *host, "--json"]) == 0
    # processes of other tests on this machine may show as external servers; none of spectui's own started
    listed = json.loads(capsys.readouterr().out)["servers"]
    assert [s for s in listed if s["origin"] != "external"] == []
