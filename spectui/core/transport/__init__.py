"""Ways to reach a host's agent: a local subprocess, or SSH (asyncssh). One interface."""

import warnings

from spectui.core.transport.base import AgentPipe, Transport

# asyncssh names cryptography's DSA types, which cryptography 46 and later deprecate with a warning at asyncssh's
# first import: nothing an operator can act on, and it would turn a command's one-sentence error into a page.
# Only warnings raised from asyncssh's own modules are silenced.
warnings.filterwarnings("ignore", message=r".* is deprecated", category=UserWarning, module=r"asyncssh(\.|$)")

__all__ = ["AgentPipe", "Transport"]
