"""Flags many processes race to raise (config/cache_flags.py), on the tests' cache and on a real Redis."""
import time

import pytest

from config.cache_flags import flag_hold, flag_lower, flag_raise


@pytest.fixture(params=["locmem", "redis"])
def cache(request):
    """The tests' in-memory cache, then a real Redis."""
    if request.param == "redis":
        return request.getfixturevalue("redis_cache")
    from django.core.cache import cache

    return cache


def test_the_first_raise_wins_until_the_flag_is_lowered(cache):
    assert flag_raise("wake", 60) is True
    assert flag_raise("wake", 60) is False
    assert flag_raise("other", 60) is True
    flag_lower("wake")
    assert flag_raise("wake", 60) is True


def test_a_flag_expires_unless_it_is_held(cache):
    assert flag_raise("short", 0.2)
    assert flag_raise("held", 0.2)
    flag_hold("held", 30)
    time.sleep(0.4)
    assert flag_raise("short", 60) is True  # expired: raised again
    assert flag_raise("held", 60) is False  # held past its first lifetime


def test_an_unreachable_cache_lets_every_caller_act(redis_down):
    assert flag_raise("wake", 60) is True
    assert flag_raise("wake", 60) is True
    flag_hold("wake", 60)
    flag_lower("wake")
