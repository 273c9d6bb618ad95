"""A benchmark run as history keeps it: :class:`RunResult`, made from a run collected on the host
(``runs.result_from``) or from an imported ``sglang.bench_serving`` row (``sglang_import``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import spectui

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """A run as stored in history: what was measured, and under what conditions."""

    run_id: str
    host: str
    state: str
    reason: str | None = None
    server: str | None = None
    profile: str | None = None
    profile_hash: str | None = None
    profile_content: dict | None = None
    launch_argv: list[str] | None = None
    preset: dict | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    repeat: int | None = None
    engine: str = "spectui"
    started_at: float | None = None
    ended_at: float | None = None
    gpus: list[str] = field(default_factory=list)
    sglang_version: str | None = None
    spectui_version: str = field(default_factory=lambda: spectui.__version__)  # read when a run is made
    speculative: dict | None = None
    stats: dict = field(default_factory=dict)
    summary: dict | None = None
    records: list[dict] = field(default_factory=list)
    sglang_result: dict | None = None
    comparison_key: str | None = None
    overlapped_with: list[str] = field(default_factory=list)  # host run ids that measured the same server meanwhile
    foreign_load: dict | None = None  # what the server served beside the run (agent's bench.foreign); None: not read

    @property
    def interrupted(self) -> bool:
        return self.state != "done"

    @property
    def overlapped(self) -> bool:
        """Another run measured the same server meanwhile: latency and throughput are not a lone run's."""
        return bool(self.overlapped_with)

    @property
    def foreign(self) -> bool:
        """The server served requests spectui did not send while the run measured (a share worth marking)."""
        return bool((self.foreign_load or {}).get("marked"))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunResult":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})
