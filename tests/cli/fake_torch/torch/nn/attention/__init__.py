import contextlib
import enum


class SDPBackend(enum.Enum):
    FLASH_ATTENTION = 1
    CUDNN_ATTENTION = 2
    EFFICIENT_ATTENTION = 3


current = None  # the backend sdpa_kernel restricts to, read by nn.functional


@contextlib.contextmanager
def sdpa_kernel(backends):
    global current
    current = backends[0]
    yield
    current = None


from . import bias  # noqa: E402
