"""The console's features, one controller each, composed by :class:`~spectui.ui.app.SpectuiApp`: each owns its
state and its workers, and hears from the App when the host link opens a session (``SessionOpened``).

``servers`` (switch, restart, stop, adopt, import; servers spectui found running), ``bench`` (``b``, ``space``,
``B``, the benchmark screen), ``tune`` (``T`` on the benchmark screen), ``probe`` (the header's interconnect,
``p``, the predicted L*), ``source`` (``f``, and the demo's wheel fetch), ``traffic`` (the demo's background
load), ``telemetry`` (the GPU rate, ``+`` and ``-``), ``logs`` (the log tail and the log screen's polling),
``alerts``, ``recording`` (``ctrl+r``) and ``quitter`` (``q``).
"""
