"""The console (Textual): the app, its screens and the dashboard's panels.

- ``app``: ``SpectuiApp``, owner of the host link (one connection worker) and the refresh timer; it hears
  the link's events as messages (``messages``) and composes the controllers;
- ``controllers/``: one per feature (servers, bench, tune, probe, source, traffic, telemetry, logs), each
  owning its state and workers;
- ``keys``: every key, declared once (footer, help screen and palette come from it);
- ``snapshots`` / ``views``: what each panel shows, built from the link by the app;
- ``derive``: break-even L*, switch stages, log line levels;
- ``draw``: rows of styled text, bars, sparklines and charts;
- ``screens/``: dashboard, connecting, host key and failure dialogs, confirmation, help, logs;
- ``widgets/``: the panels, each one Line-API widget drawn from one snapshot.
"""
