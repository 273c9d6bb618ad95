"""Failures on request, shaped like SGLang's.

* load failure (``--sim-fail-load oom``, or weights that do not fit): the scheduler's traceback
  (``torch.OutOfMemoryError: CUDA out of memory...``), the launcher's ``Initialization failed``
  traceback, the ranks die, exit status 1;
* crash (``--sim-crash-after S``): ``Scheduler hit an exception`` with a CUDA error traceback,
  ``Received sigquit from a child process``, then the whole process tree is killed (SIGKILL,
  the leader included, as ``kill_process_tree`` does);
* hang (``--sim-hang-after S``): the server stops answering anything, ``/health`` included,
  its ranks spin at 100% utilization (a stuck collective), and only a signal ends it;
* slowdown (``--sim-slow-after S``, ``--sim-slow-factor F``, default 6): from then on every
  forward pass, prefill, decode and verify alike, takes F times as long, as when a GPU throttles
  its clocks (a power or thermal limit) or one rank straggles and every collective waits for it.
  Nothing is logged and ``/health`` still answers; generation throughput falls F-fold and, under
  load, requests pile up in the queue while the ranks read busy.
"""

from __future__ import annotations

import os
import signal
import sys
import time

SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


class LoadFailure(Exception):
    """Start-up failed; ``str(exc)`` is the scheduler's traceback text."""


def _frames(frames) -> str:
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append('  File "%s/%s", line %d, in %s' % (SITE, path, line, func))
        out.append("    " + code)
    return "\n".join(out)


def oom_traceback(alloc_mib: float, total_mib: float, used_mib: float) -> str:
    frames = [
        ("managers/scheduler.py", 6351, "run_scheduler_process", "scheduler = Scheduler("),
        ("managers/scheduler.py", 512, "__init__", "self.init_model_worker()"),
        ("managers/tp_worker.py", 247, "__init__", "self.model_runner = ModelRunner("),
        ("model_executor/model_runner.py", 418, "__init__", "self.initialize(min_per_gpu_memory)"),
        ("model_executor/model_runner.py", 1318, "load_model", "self.model = self.loader.load_model("),
        ("model_loader/loader.py", 702, "load_model", "self.load_weights_and_postprocess("),
        ("models/deepseek_v2.py", 3015, "load_weights", "param.data.copy_(loaded_weight)"),
    ]
    free = max(0.0, total_mib - used_mib)
    msg = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total capacity of "
        "%.2f GiB of which %.2f MiB is free. Including non-PyTorch memory, this process has %.2f GiB memory in use. "
        "Of the allocated memory %.2f GiB is allocated by PyTorch, and %.2f MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        % (max(alloc_mib, 64.0) / 1024.0, total_mib / 1024.0, free, used_mib / 1024.0,
           (used_mib - 600.0) / 1024.0, 181.25)
    )
    return _frames(frames) + "\n" + msg


def not_enough_memory_traceback() -> str:
    frames = [
        ("managers/scheduler.py", 6351, "run_scheduler_process", "scheduler = Scheduler("),
        ("managers/scheduler.py", 512, "__init__", "self.init_model_worker()"),
        ("model_executor/model_runner.py", 418, "__init__", "self.initialize(min_per_gpu_memory)"),
        ("model_executor/model_runner.py", 1502, "init_memory_pool", "raise RuntimeError("),
    ]
    return _frames(frames) + "\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


def crash_traceback() -> str:
    frames = [
        ("managers/scheduler.py", 6366, "run_scheduler_process", "scheduler.run_event_loop()"),
        ("managers/scheduler.py", 1412, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
        ("managers/scheduler.py", 3120, "run_batch", "batch_result = self.model_worker.forward_batch_generation("),
        ("managers/tp_worker.py", 488, "forward_batch_generation", "logits_output, can_run_cuda_graph = self.model_runner.forward("),
        ("model_executor/model_runner.py", 2481, "forward", "output = self._forward_raw("),
    ]
    return (
        _frames(frames)
        + "\ntorch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )


def launcher_init_failed_traceback() -> str:
    frames_text = (
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '  File "<frozen runpy>", line 88, in _run_code\n'
        '  File "%s/../launch_server.py", line 32, in <module>\n'
        "    run_server(server_args)\n"
        '  File "%s/entrypoints/http_server.py", line 2701, in launch_server\n'
        "    tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(\n"
        '  File "%s/entrypoints/engine.py", line 1102, in _launch_subprocesses\n'
        '    raise RuntimeError(\n'
        "RuntimeError: Initialization failed. Please see the error messages above."
    ) % (SITE, SITE, SITE)
    return frames_text


def write_lines(stream, text: str) -> None:
    try:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def die_like_kill_process_tree(ranks) -> None:
    """Kill the ranks, then this process, with SIGKILL."""
    ranks.kill()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def slow_down(scheduler, factor: float) -> None:
    """Make every forward pass of ``scheduler`` ``factor`` times slower from its next step on."""
    if scheduler is not None:
        scheduler.slow_factor = float(factor)


def hang_forever(ranks) -> None:
    """Stop answering: block the event loop (HTTP included); a signal still ends the process."""
    ranks.publish(1.0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:
        time.sleep(3600)
