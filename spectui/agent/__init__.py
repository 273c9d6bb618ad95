"""The host-side agent. ``agent.py`` is shipped alone over the SSH channel and run by the
host's Python (3.8 or newer); it must import nothing from the rest of spectui."""
