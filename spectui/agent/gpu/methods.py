"""GPU requests: one sample now (``gpu.sample``), or ``gpu`` events at a rate (``gpu.subscribe``,
``gpu.unsubscribe``), from the agent's GPU source (see ``select``)."""

from __future__ import annotations

from ..protocol import Method, telemetry_interval
from .stream import GpuStream


class GpuMethods(object):
    def __init__(self, agent):
        self.agent = agent
        self.stream = None

    def sample(self, params):
        return GpuStream(self.agent.gpu_source(), self.agent.channel).frame()

    def subscribe(self, params):
        interval = telemetry_interval(params, "GPU telemetry")
        self.unsubscribe(params)
        self.stream = GpuStream(self.agent.gpu_source(interval), self.agent.channel, interval)
        self.stream.start()
        return {"source": self.stream.source.name, "interval_s": self.stream.interval_s,
                "message": getattr(self.stream.source, "message", None)}

    def unsubscribe(self, params):
        if self.stream is not None:
            self.stream.stop()
            self.stream = None
        return {"stopped": True}


def methods(agent):
    gpu = GpuMethods(agent)
    agent.on_close(lambda: gpu.unsubscribe({}))
    return {Method.GPU_SAMPLE: gpu.sample, Method.GPU_SUBSCRIBE: gpu.subscribe, Method.GPU_UNSUBSCRIBE: gpu.unsubscribe}
