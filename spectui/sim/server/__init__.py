"""``python -m spectui.sim.server``: the stand-in for ``python -m sglang.launch_server``.

``cli`` (flags), ``config`` (resolved server args), ``startup`` (load sequence), ``http`` (the
HTTP/1.1 server), ``api`` (endpoints), ``app`` (the server's life).
"""
