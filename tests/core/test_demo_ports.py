"""The demo's ports: taken profile ports move to free ones (and the note says so), a port base gives a
fixed range or is refused in one sentence, and the demo's own kept servers keep their ports."""

import json
import socket
from contextlib import ExitStack

import pytest

from spectui.core.demo_ports import DemoPortError, plan_demo_ports, port_free, port_ranges
from spectui.core.profiles import load_profiles


def free_block(count: int, start: int = 40000) -> int:
    """The first port from ``start`` up with ``count`` free ports after it (and the 100 above each)."""
    port = start
    while port + count + 200 < 65535:
        if all(port_free("127.0.0.1", p) and port_free("127.0.0.1", p + 100) for p in range(port, port + count)):
            return port
        port += count + 7
    raise AssertionError("no free block of ports on this machine")


def held(stack: ExitStack, port: int) -> socket.socket:
    s = stack.enter_context(socket.socket())
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def library(tmp_path, ports: dict[str, int], host: str = "127.0.0.1"):
    folder = tmp_path / "profiles"
    folder.mkdir(exist_ok=True)
    for name, port in ports.items():
        (folder / f"{name}.yaml").write_text(f"name: {name}\nmodel: sim/{name}\nhost: {host}\nport: {port}\n"
                                             "gpus: [0]\nargs:\n  tp-size: 1\n")
    lib = load_profiles([str(folder)], layers=[])
    assert lib.ok, lib.errors
    return lib


@pytest.fixture
def ports():
    return free_block(2)


def test_free_ports_stay_and_nothing_is_noted(tmp_path, ports):
    lib = library(tmp_path, {"a": ports, "b": ports, "c": ports + 1})
    plan = plan_demo_ports(lib, state_dir=str(tmp_path / "state"))
    assert plan.moved == {} and plan.note is None and plan.short_note is None
    assert plan.apply(lib) is lib


def test_a_taken_port_moves_to_the_first_free_one_a_hundred_up_for_every_profile_on_it(tmp_path, ports):
    lib = library(tmp_path, {"a": ports, "b": ports, "c": ports + 1})
    with ExitStack() as stack:
        held(stack, ports)
        plan = plan_demo_ports(lib, state_dir=str(tmp_path / "state"))
    assert plan.moved == {ports: ports + 100} and plan.taken == (ports,)
    assert plan.note == f"demo: port {ports} taken, using {ports + 100}"
    assert plan.short_note == f"port {ports + 100}"
    moved = plan.apply(lib)
    assert {p.name: p.port for p in moved} == {"a": ports + 100, "b": ports + 100, "c": ports + 1}
    assert moved.profiles["a"].content_hash != lib.profiles["a"].content_hash  # what runs is what the hash says


def test_taken_ports_skip_ports_that_are_taken_too(tmp_path, ports):
    lib = library(tmp_path, {"a": ports, "c": ports + 1})
    with ExitStack() as stack:
        for p in (ports, ports + 1, ports + 100):
            held(stack, p)
        plan = plan_demo_ports(lib, state_dir=str(tmp_path / "state"))
    a, c = plan.moved[ports], plan.moved[ports + 1]
    assert set(plan.moved) == {ports, ports + 1}
    assert ports + 100 < a < c  # past the taken ports + 100 (other processes may hold the next ones)
    assert plan.note.startswith(f"demo: ports {ports}-{ports + 1} taken, using ")
    assert str(a) in plan.note and str(c) in plan.note


def test_a_port_held_by_a_live_server_of_the_demo_itself_is_not_taken(tmp_path, ports):
    lib = library(tmp_path, {"a": ports, "c": ports + 1})
    servers = tmp_path / "state" / "servers"
    servers.mkdir(parents=True)
    (servers / "a.json").write_text(json.dumps({"name": "a", "port": ports, "state": "ready"}))
    (servers / "c.json").write_text(json.dumps({"name": "c", "port": ports + 1, "state": "stopped"}))
    with ExitStack() as stack:
        held(stack, ports)      # as the kept server a holds it
        held(stack, ports + 1)  # c's record says stopped: whoever holds it now is someone else
        plan = plan_demo_ports(lib, state_dir=str(tmp_path / "state"))
    assert plan.moved == {ports + 1: ports + 101} and plan.taken == (ports + 1,)


def test_a_port_base_gives_the_profiles_ports_in_order_from_it(tmp_path, ports):
    base = free_block(2, start=ports + 10)
    lib = library(tmp_path, {"a": ports + 1, "b": ports, "c": ports})
    plan = plan_demo_ports(lib, base=base, state_dir=str(tmp_path / "state"))
    assert {p.name: p.port for p in plan.apply(lib)} == {"a": base + 1, "b": base, "c": base}
    assert plan.note is None  # the operator chose it


def test_a_port_base_with_a_taken_port_is_refused_in_one_sentence(tmp_path, ports):
    lib = library(tmp_path, {"a": ports, "c": ports + 1})
    with ExitStack() as stack:
        held(stack, ports + 1)
        with pytest.raises(DemoPortError) as err:
            plan_demo_ports(lib, base=ports, state_dir=str(tmp_path / "state"))
    text = str(err.value)
    assert text == (f"--port-base {ports}: port {ports + 1} of the demo's range {ports}-{ports + 1} is in use on "
                    "this machine; stop what listens there or choose another port base.")


@pytest.mark.parametrize("base", [80, 1023, 65535])
def test_a_port_base_out_of_range_is_refused_naming_where_it_came_from(tmp_path, ports, base):
    lib = library(tmp_path, {"a": ports, "c": ports + 1})
    with pytest.raises(DemoPortError) as err:
        plan_demo_ports(lib, base=base, base_from="demo.port_base in /cfg/config.yaml")
    assert str(err.value) == (f"demo.port_base in /cfg/config.yaml takes a port from 1024 to 65534 (the demo's "
                              f"profiles use 2 ports from it), not {base}.")


def test_port_ranges_joins_consecutive_ports():
    assert port_ranges([30002, 30000, 30001, 30005, 30005]) == "30000-30002, 30005"
    assert port_ranges([]) == ""
