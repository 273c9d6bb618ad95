"""A call cancelled in the same step its reply arrives is cancelled, not answered.

Python 3.11's ``asyncio.wait_for`` returns the result and drops the cancellation when the awaited
future is already done as the cancel lands (fixed in 3.12, CPython gh-86296). The agent's reader sets
a reply and hands the events read with it to listeners in one step, so a listener that cancels the
caller (the console's stop, a comparison's Ctrl-C on a progress event) hit exactly that window, and the
cancelled comparison ran on to its end.
"""

import asyncio
import json

import pytest

from spectui.agent.protocol import PROTOCOL_VERSION
from spectui.core.rpc import AgentClient
from spectui.core.transport.base import AgentPipe


class QueuePipe(AgentPipe):
    """An agent whose lines the test writes; every request the client writes is kept."""

    def __init__(self):
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.sent: list[dict] = []
        self.request = asyncio.Event()

    async def readline(self) -> bytes:
        return await self.lines.get()

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))
        self.request.set()

    async def drain(self) -> None:
        return None

    def close_stdin(self) -> None:
        self.lines.put_nowait(b"")

    async def wait_exit(self, timeout: float) -> int | None:
        return 0

    async def stderr_tail(self) -> str:
        return ""


def line(msg: dict) -> bytes:
    return (json.dumps(msg) + "\n").encode()


@pytest.fixture
async def agent():
    pipe = QueuePipe()
    client = AgentClient(pipe, expected_hash="h", host_label="test-host")
    pipe.lines.put_nowait(line({"type": "hello", "protocol": PROTOCOL_VERSION, "agent_hash": "h"}))
    await client.handshake("python3")
    yield pipe, client
    await client.close()


async def test_a_call_cancelled_as_its_reply_arrives_raises_cancelled(agent):
    pipe, client = agent
    call = asyncio.create_task(client.call("bench.status", {"run_id": "r1"}))
    await pipe.request.wait()
    (req,) = pipe.sent

    def cancel_on_progress(ev):
        if ev.name == "bench_progress":
            call.cancel()

    client.add_listener(cancel_on_progress)
    # the reply and an event read together: the reader sets the reply, then the listener cancels the caller
    pipe.lines.put_nowait(line({"type": "reply", "id": req["id"], "result": {"state": "running"}}))
    pipe.lines.put_nowait(line({"type": "event", "event": "bench_progress", "data": {"run_id": "r1"}}))
    with pytest.raises(asyncio.CancelledError):
        await call
    assert call.cancelled()


async def test_a_call_still_answers_and_times_out(agent):
    pipe, client = agent
    call = asyncio.create_task(client.call("ping"))
    await pipe.request.wait()
    pipe.lines.put_nowait(line({"type": "reply", "id": pipe.sent[-1]["id"], "result": {"pong": True}}))
    assert await call == {"pong": True}
    from spectui.core.errors import AgentCallError
    with pytest.raises(AgentCallError, match="no answer from test-host within 0.05 s"):
        await client.call("ping", timeout=0.05)
