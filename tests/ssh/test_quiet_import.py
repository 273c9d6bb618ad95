"""Loading spectui's SSH side prints nothing: asyncssh's own deprecation warnings (cryptography 46 and later deprecate
the DSA types asyncssh still names) are not the operator's to act on, and a command's error must stay one sentence."""

import subprocess
import sys


def test_loading_the_ssh_transport_prints_nothing():
    for module in ("spectui.core.transport.ssh_client", "spectui.core.transport.known_hosts",
                   "spectui.core.transport.ssh_config"):
        code = f"import {module} as m, asyncssh; m.__name__"
        if module.endswith("ssh_config"):  # it loads asyncssh only when a host's config is read
            code = f"import {module} as m; m.host_config([], 'gpu-host', None, None)"
        r = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stderr == "", (module, r.stderr)
