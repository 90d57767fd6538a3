# A stand-in for the part of torch that bench/cuda/sdpa_reference.py calls, so that its measuring
# path runs in CI (tests/cli/test_sdpa_reference.cpp) without torch or a GPU: tensors are shapes,
# every pair of CUDA events is 0.5 ms apart, graphs replay nothing. The backends' refusals are
# scripted in nn/functional.py.
import contextlib
import types

__version__ = "fake"
bfloat16 = "bfloat16"
uint8 = "uint8"


class _Tensor:
    def __init__(self, *shape):
        self.shape = shape

    def repeat_interleave(self, n, dim):
        return _Tensor(*self.shape)

    def copy_(self, other):
        return self


class Generator:
    def __init__(self, device=None):
        pass

    def manual_seed(self, seed):
        return self


def randn(*shape, device=None, dtype=None, generator=None):
    return _Tensor(*shape)


def ones(n, dtype=None, device=None):
    return _Tensor(n)


def empty_like(t):
    return _Tensor(*t.shape)


class _Event:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return 0.5  # ms


class _Stream:
    def wait_stream(self, other):
        pass


class _Graph:
    def replay(self):
        pass


cuda = types.SimpleNamespace(
    is_available=lambda: True, get_device_name=lambda: "Fake GPU", synchronize=lambda: None, Event=_Event,
    Stream=_Stream, current_stream=_Stream, CUDAGraph=_Graph, stream=lambda s: contextlib.nullcontext(),
    graph=lambda g: contextlib.nullcontext())
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 0))
