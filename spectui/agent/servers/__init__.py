"""The SGLang servers on the host: started, watched, stopped and re-adopted (``manager``,
``process``, ``records``, ``watch``), found running without spectui (``discover``,
``external``, ``origin``, ``external_logs``), their live figures (``telemetry`` from
``metrics``, the log and ``/server_info``; rules in ``figures`` and ``releases``), and the
host's SGLang asked about launch commands (``launch``, ``sglang_argparse``)."""
