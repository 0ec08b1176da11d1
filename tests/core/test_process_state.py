"""Threads of one process share torch's process-wide state: an overlapped run's nodes
(session.runner.OverlapRunner) must not corrupt it for each other (core/device.py)."""

from __future__ import annotations

import threading

import onnx
import torch
from torch import nn

from connect_zero_pipeline.core import device as device_module
from connect_zero_pipeline.core.device import torch_threads, use_tensor_cores
from connect_zero_pipeline.core.inference import make_evaluate_fn, onnx_bytes_for_inference
from connect_zero_pipeline.core.models import build_model

WAIT_S = 1.0
"""How long the first export waits, inside torch's exporter, for a second one to enter it."""


def _paused_model(inside: threading.Event, second_in: threading.Event) -> nn.Module:
    """A tiny network whose first forward (the exporter's trace) says it is inside an export
    and waits there until a second export is inside too (or :data:`WAIT_S` has passed: an
    export lock keeps the second one out)."""
    first = [True]

    class Paused(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = build_model("tiny")

        def forward(self, boards):
            if first[0]:
                first[0] = False
                inside.set()
                second_in.wait(WAIT_S)
            else:
                second_in.set()
            return self.net(boards)

    return Paused()


def test_two_onnx_exports_at_once_in_threads_both_succeed():
    """The race is made certain: the second export starts while the first is inside torch's
    exporter. Without the process's export lock the TorchScript exporter fails (its
    ``GLOBALS.in_onnx_export`` flag is the process's); with it the second waits."""
    inside, second_in = threading.Event(), threading.Event()
    model = _paused_model(inside, second_in)
    results: dict[str, bytes | BaseException] = {}

    def run(name, fn, m):
        try:
            results[name] = fn(m)
        except BaseException as exc:
            results[name] = exc

    a = threading.Thread(target=run, args=("first", onnx_bytes_for_inference, model))
    a.start()
    assert inside.wait(60)
    second = _paused_model(threading.Event(), second_in)
    second.net.load_state_dict(model.net.state_dict())
    b = threading.Thread(target=run, args=("second", onnx_bytes_for_inference, second))
    b.start()
    a.join(120)
    b.join(120)
    failed = {k: repr(v) for k, v in results.items() if isinstance(v, BaseException)}
    assert not failed and set(results) == {"first", "second"}
    for data in results.values():
        proto = onnx.load_from_string(data)
        assert [i.name for i in proto.graph.input] == ["board"]


def test_evaluate_functions_built_in_threads_at_once_all_work():
    """Four threads each build onnxruntime evaluate functions of one model behind a barrier
    (what failed 30 times in 40 before the lock), and every one computes the model."""
    model = build_model("tiny").eval()
    boards = torch.zeros(3, 6, 7, dtype=torch.int8)
    with torch.inference_mode():
        want = model(boards)[0]
    barrier, errors, outputs = threading.Barrier(4), [], []

    def build():
        for _ in range(3):
            barrier.wait()
            try:
                outputs.append(make_evaluate_fn(model, "cpu", backend="onnxruntime")(boards)[0])
            except Exception as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and len(outputs) == 12
    for logits in outputs:
        assert torch.allclose(logits, want, atol=1e-5)


def test_tensor_cores_are_set_for_the_process_only_where_a_device_is_cuda(monkeypatch):
    before = torch.get_float32_matmul_precision()
    try:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        assert not use_tensor_cores(["auto", "cuda"])  # no CUDA: nothing to set
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the flag alone
        assert not use_tensor_cores(["cpu", torch.device("cpu")])
        assert torch.get_float32_matmul_precision() == before
        assert use_tensor_cores(["cpu", "auto"])  # auto is CUDA here
        assert torch.get_float32_matmul_precision() == device_module.MATMUL_PRECISION
    finally:
        torch.set_float32_matmul_precision(before)


def test_a_threads_setting_in_one_thread_leaves_another_threads_count():
    """torch's OpenMP backend keeps the intra-op count per thread once the thread has run:
    an overlapped node's ``num_threads`` does not reach the node beside it."""
    ready, set_, done = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def other():
        seen["before"] = torch.get_num_threads()  # this thread's count from now on
        ready.set()
        set_.wait(30)
        seen["during"] = torch.get_num_threads()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    assert ready.wait(30)
    mine = seen["before"] + 1
    with torch_threads(mine):
        assert torch.get_num_threads() == mine
        set_.set()
        assert done.wait(30)
    t.join()
    assert seen["during"] == seen["before"]
