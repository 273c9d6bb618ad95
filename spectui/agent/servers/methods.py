"""Server requests: list, start, stop, switch, wait for, read the log of and adopt servers (the
agent's ``manager``), and ask a host interpreter about SGLang and its launch flags (``launch``)."""

from __future__ import annotations

from . import launch
from ..protocol import Method


def methods(agent):
    servers = agent.servers
    return {
        Method.SERVERS_LIST: servers.list,
        Method.SERVER_START: servers.start,
        Method.SERVER_STOP: servers.stop,
        Method.SERVER_SWITCH: servers.switch,
        Method.SERVER_WAIT: servers.wait,
        Method.SERVER_LOGS: servers.logs,
        Method.SERVER_PLAN_STOP: servers.plan_stop,
        Method.SERVER_ADOPT: servers.adopt_external,
        Method.SERVER_PLAN_SWITCH: servers.plan_switch,
        Method.PYTHON_SGLANG: launch.sglang_version,
        Method.LAUNCH_HELP: launch.launch_help,
        Method.LAUNCH_PARSE: launch.launch_parse,
    }
