"""Ways to reach a host's agent: a local subprocess, or SSH (asyncssh). One interface."""

from spectui.core.transport.base import AgentPipe, Transport

__all__ = ["AgentPipe", "Transport"]
