"""LocalCache's computing: by default each thread that misses computes; with one_compute_at_a_time, one does and
the others read its value."""
import threading
import time

import pytest

from config.local_cache import LocalCache
from tests.conftest import at_once


def racing_computes(cache: LocalCache) -> tuple[int, list]:
    """Six threads miss the same key together; how many computed, and what each got."""
    computed, lock = [], threading.Lock()

    def compute():
        with lock:
            computed.append(1)
        time.sleep(0.05)  # long enough for every thread to miss while it runs
        return "map"

    results = at_once(lambda: cache.get_or_compute("oberland", compute, size=len), 6)
    return len(computed), results


@pytest.mark.django_db
def test_one_compute_at_a_time_computes_a_missing_value_once_for_all_waiting():
    cache = LocalCache("test-one-compute", ttl=60, check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS",
                       one_compute_at_a_time=True)
    computes, results = racing_computes(cache)
    assert computes == 1 and results == ["map"] * 6
    assert cache.get_or_compute("oberland", lambda: "other") == "map"


@pytest.mark.django_db
def test_by_default_each_thread_that_misses_computes():
    cache = LocalCache("test-each-computes", ttl=60, check_setting="WAREHOUSE_LOCAL_CHECK_SECONDS")
    computes, results = racing_computes(cache)
    assert computes == 6 and results == ["map"] * 6
