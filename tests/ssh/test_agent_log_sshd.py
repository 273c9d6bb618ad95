"""Over a real OpenSSH sshd: the host agent's log records arrive in the console's log file, at the
console's level, with the host named."""

from __future__ import annotations

import pytest

from spectui.core import logsetup
from spectui.core.session import open_session

pytestmark = pytest.mark.sshd


async def log_of_a_bad_request(sshd, state_dir, path, **options) -> tuple[str, dict]:
    """Connect with logging set up by ``options``, send a line the agent cannot read (it logs a warning),
    close; the client's log file and the agent's hello."""
    try:
        logsetup.configure(log_file_path=path, **options)
        session = await open_session(sshd.host_target(state_dir))
        try:
            session.client.pipe.write(b"{not json\n")
            await session.client.rtt()  # the agent reads lines in order: the record is in by now
        finally:
            await session.close()
    finally:
        logsetup.reset()
    return path.read_text(), session.hello


async def test_agent_records_reach_the_client_log_file(sshd, state_dir, tmp_path):
    text, hello = await log_of_a_bad_request(sshd, state_dir, tmp_path / "client.log", debug=True)
    host = f"[{sshd.user}@127.0.0.1:{sshd.port}]"
    assert f"INFO    spectui.host.main: {host} agent started: pid {hello['pid']}" in text
    assert f"WARNING spectui.host.main: {host} an unreadable request line (" in text and "'{not json'" in text


async def test_at_the_default_level_only_warnings_come_over(sshd, state_dir, tmp_path):
    text, _ = await log_of_a_bad_request(sshd, state_dir, tmp_path / "client.log")
    assert "agent started" not in text
    assert "an unreadable request line" in text
