"""The host-side agent: shipped over the SSH channel as one payload and run from memory by the
host's Python (3.8 or newer); it imports nothing from the rest of spectui.

At the top: ``main`` (the entry: requests in, replies and events out), ``protocol`` (the wire
vocabulary: message shapes, server states, method and event names, defaults), ``bootstrap``
(the payload loader, and detached runs of agent code) and ``facts`` (who the host is). Each
job has its folder: ``gpu/`` (where GPU samples come from), ``servers/`` (starting, watching
and stopping SGLang servers, and their live figures), ``logs/`` (where a log line is parsed
and followed), ``source/`` (SGLang's source on the host), ``probe/`` (the verify-cost probe)
and ``bench/`` (benchmark runs and demo traffic). A job's requests are in its ``methods``.
"""
